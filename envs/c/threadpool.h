/* threadpool.h — the vecenv's own threads, used when the compiler has no OpenMP (Apple clang, MSVC
 * without vcomp, or PUFFGPU_OPENMP=0): pthreads on POSIX, Win32 threads on Windows.
 *
 *   pool_parallel_for(lo, hi, threads, fn, arg)   calls fn(arg, a, b) on contiguous chunks of
 *                                                 [lo, hi) and returns when all are done
 *
 * The partition is OpenMP's schedule(static) without a chunk size: n = hi - lo items over
 * t = min(threads, n) threads, thread i gets q + (i < r) items starting at lo + i*q + min(i, r)
 * (q = n / t, r = n % t), and the caller runs chunk 0 itself, as OpenMP's master thread does.
 * So an env lands on the same thread index either way; results do not depend on it anyway (every
 * env owns its rng, and shared state merges in env order between steps).
 *
 * Workers are created on first use, parked on their own condition variable between jobs and
 * never exit. Several host threads may call pool_parallel_for at once (the trainer steps two env
 * buffers from two threads): each job takes workers that are idle, or starts new ones, so two
 * jobs never share a worker. One mutex guards the idle list and the job counters; nothing else is
 * shared. After fork() the child forgets the parent's workers (they do not exist there).
 */
#ifndef PUF_THREADPOOL_H
#define PUF_THREADPOOL_H

#include <stdlib.h>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOGDI
#define NOGDI   /* wingdi.h's Rectangle and winuser.h's DrawText, ShowCursor, CloseWindow, */
#endif
#ifndef NOUSER
#define NOUSER  /* LoadImage ... collide with raylib's names */
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
typedef SRWLOCK pool_mutex;
typedef CONDITION_VARIABLE pool_cond;
#define POOL_MUTEX_INIT SRWLOCK_INIT
#define POOL_THREADS_KIND "win32"
static void pool_lock(pool_mutex* m) { AcquireSRWLockExclusive(m); }
static void pool_unlock(pool_mutex* m) { ReleaseSRWLockExclusive(m); }
static void pool_cond_init(pool_cond* c) { InitializeConditionVariable(c); }
static void pool_cond_destroy(pool_cond* c) { (void)c; }
static void pool_wait(pool_cond* c, pool_mutex* m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
static void pool_signal(pool_cond* c) { WakeConditionVariable(c); }
#else
#include <pthread.h>
typedef pthread_mutex_t pool_mutex;
typedef pthread_cond_t pool_cond;
#define POOL_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define POOL_THREADS_KIND "pthreads"
static void pool_lock(pool_mutex* m) { pthread_mutex_lock(m); }
static void pool_unlock(pool_mutex* m) { pthread_mutex_unlock(m); }
static void pool_cond_init(pool_cond* c) { pthread_cond_init(c, NULL); }
static void pool_cond_destroy(pool_cond* c) { pthread_cond_destroy(c); }
static void pool_wait(pool_cond* c, pool_mutex* m) { pthread_cond_wait(c, m); }
static void pool_signal(pool_cond* c) { pthread_cond_signal(c); }
#endif

#define POOL_STACK_BYTES ((size_t)8 << 20) /* as a main thread's; macOS gives new threads 512 KiB */

typedef void (*pool_fn)(void* arg, int lo, int hi);

typedef struct PoolJob {
    pool_fn fn;
    void* arg;
    int pending;     /* workers still running a chunk of this job (guarded by puf_pool.lock) */
    pool_cond done;  /* signalled when pending reaches 0 */
} PoolJob;

typedef struct PoolWorker {
    struct PoolWorker* next_idle;
    pool_cond wake;
    PoolJob* job;    /* non-NULL: run chunk [lo, hi) of it (set under puf_pool.lock) */
    int lo, hi;
} PoolWorker;

static struct {
    pool_mutex lock;
    PoolWorker* idle;
} puf_pool = {POOL_MUTEX_INIT, NULL};

static void pool_worker_loop(PoolWorker* w) {
    pool_lock(&puf_pool.lock);
    for (;;) {
        while (w->job == NULL) pool_wait(&w->wake, &puf_pool.lock);
        PoolJob* job = w->job;
        int lo = w->lo, hi = w->hi;
        pool_unlock(&puf_pool.lock);
        job->fn(job->arg, lo, hi);
        pool_lock(&puf_pool.lock);
        w->job = NULL;
        w->next_idle = puf_pool.idle;
        puf_pool.idle = w;
        if (--job->pending == 0) pool_signal(&job->done);
    }
}

#ifdef _WIN32
static DWORD WINAPI pool_thread_main(LPVOID p) {
    pool_worker_loop((PoolWorker*)p);
    return 0;
}
static int pool_start_thread(PoolWorker* w) {
    HANDLE h = CreateThread(NULL, POOL_STACK_BYTES, pool_thread_main, w,
                            STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (h == NULL) return 0;
    CloseHandle(h);
    return 1;
}
#else
static void* pool_thread_main(void* p) {
    pool_worker_loop((PoolWorker*)p);
    return NULL;
}
static void pool_atfork_prepare(void) { pthread_mutex_lock(&puf_pool.lock); }
static void pool_atfork_parent(void) { pthread_mutex_unlock(&puf_pool.lock); }
static void pool_atfork_child(void) {
    /* the workers were not copied into the child: start afresh (their structs leak, once) */
    pthread_mutex_init(&puf_pool.lock, NULL);
    puf_pool.idle = NULL;
}
static pthread_once_t pool_atfork_once = PTHREAD_ONCE_INIT;
static void pool_register_atfork(void) {
    pthread_atfork(pool_atfork_prepare, pool_atfork_parent, pool_atfork_child);
}
static int pool_start_thread(PoolWorker* w) {
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0) return 0;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, POOL_STACK_BYTES);
    int ok = pthread_create(&t, &attr, pool_thread_main, w) == 0;
    pthread_attr_destroy(&attr);
    return ok;
}
#endif

/* An idle worker, or a new one (NULL if no thread could be started). Called under the lock;
 * a new worker blocks on the lock until the caller releases it, then finds its job set. */
static PoolWorker* pool_take_worker(void) {
    PoolWorker* w = puf_pool.idle;
    if (w != NULL) {
        puf_pool.idle = w->next_idle;
        return w;
    }
#ifndef _WIN32
    pthread_once(&pool_atfork_once, pool_register_atfork);
#endif
    w = (PoolWorker*)calloc(1, sizeof(PoolWorker));
    if (w == NULL) return NULL;
    pool_cond_init(&w->wake);
    if (!pool_start_thread(w)) {
        pool_cond_destroy(&w->wake);
        free(w);
        return NULL;
    }
    return w;
}

static void pool_parallel_for(int lo, int hi, int threads, pool_fn fn, void* arg) {
    int n = hi - lo;
    if (n <= 0) return;
    if (threads > n) threads = n;
    if (threads <= 1) {
        fn(arg, lo, hi);
        return;
    }
    int q = n / threads, r = n % threads;
    int own_hi = lo + q + (r > 0 ? 1 : 0);  /* chunk 0, the caller's */
    int extra_lo = own_hi, extra_hi = own_hi;  /* chunks no thread could take: the caller's too */
    PoolJob job;
    job.fn = fn;
    job.arg = arg;
    job.pending = 0;
    pool_cond_init(&job.done);
    pool_lock(&puf_pool.lock);
    for (int t = 1; t < threads; t++) {
        int a = lo + t * q + (t < r ? t : r), b = a + q + (t < r ? 1 : 0);
        PoolWorker* w = pool_take_worker();
        if (w == NULL) {  /* out of threads: the caller runs the rest, still in order */
            extra_lo = a;
            extra_hi = hi;
            break;
        }
        w->job = &job;
        w->lo = a;
        w->hi = b;
        job.pending++;
        pool_signal(&w->wake);
    }
    pool_unlock(&puf_pool.lock);
    fn(arg, lo, own_hi);
    if (extra_hi > extra_lo) fn(arg, extra_lo, extra_hi);
    pool_lock(&puf_pool.lock);
    while (job.pending > 0) pool_wait(&job.done, &puf_pool.lock);
    pool_unlock(&puf_pool.lock);
    pool_cond_destroy(&job.done);
}

#endif /* PUF_THREADPOOL_H */
