"""The errors an env raises for its user: every env failure is an EnvError, which the trainer and
the env programs report as a message, without a traceback."""


class EnvError(RuntimeError):
    """An env could not be built, started or stepped (a compile error, a game that throws, a server
    that dies for good): its message is for the user, who sees it without a traceback."""


class EnvBuildError(EnvError):
    """The C compiler rejected an env module (or its module could not be loaded); .stderr holds
    the compiler's messages."""

    def __init__(self, message, stderr=""):
        super().__init__(message)
        self.stderr = stderr


class EnvCrashError(EnvError):
    """A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) in an env's C code in this process:
    the vecenv caught it on the thread that ran the env and is dead; nothing calls into its envs
    again. `what` says what happened and where, `advice` what to do; the message is both lines."""

    def __init__(self, what, advice):
        super().__init__(f"{what}\n{advice}")
        self.what, self.advice = what, advice
