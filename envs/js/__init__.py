"""The JavaScript-game kind: one p5.js-style .js file is an env, run by QuickJS-ng in each env.

    kind.py            its declaration (registered in envs/registry.py); default.ini: the training
                       settings of a game that has no ini of its own
    env.py             JsEnv: a VecEnv whose header (generated per picture size and action count)
                       includes jsenv.h; the game's keys and the action table
    jsenv.h, jsvec.c   the env in C: one JS runtime per env, the p5 host, the drawing primitives
    p5native.h         the frequent p5 calls in C, on the prelude's own state
    p5.js              the p5 prelude and the host contract, shared with the browser page
    engine.py          QuickJS-ng from its PyPI source distribution, edited (engine_patches.py) and
                       compiled once per compiler
    browser.py, web/   the game in a browser page, and replaying its recordings in the C env
"""
