"""Edits to QuickJS-ng's interpreter, applied to quickjs.c as envs/js/engine.py unpacks the pinned
sdist: (what, old text, new text), each old text found exactly once. None changes what a program
computes; each showed in profiles of the games (tools/bench_env.py --ale). Instructions per step of
PlayTrain's breakout.js under callgrind: 427K as the sdist ships at -O2, 397K with NDEBUG (engine
FLAGS), 379K with the comparison and JS_FreeValue edits, 357K with the property guesses, 331K with
the global lookup and the value release inlined into the interpreter loop.

- A comparison (< <= > >= == != === !==) of two numbers of which one is a double compares them
  inline, as the engine already does for two int32s; its slow path converts both to doubles and
  compares them with the same IEEE operator (NaN compares false, -0 equals 0).
- JS_FreeValue and JS_FreeValueRT, exported out-of-line functions in QuickJS-ng, are inlined
  inside the engine (one call per value the interpreter drops); the exported symbols remain.
- Property reads and writes (obj.x, obj.f(), obj.x = v) and global names guess the property's
  index in the object's shape: the index found last at the same bytecode position (its offset in
  its function and the function's length, hashed into one 4096-entry table that all runtimes
  share, so 64 runtimes of a game on a core read the same few lines). A guess is used only when the shape's property at
  that index has the name looked for; a shape holds each name once, so a checked guess is exactly
  what the engine's hash lookup returns, and a wrong guess costs one comparison. Games read the
  same fields of same-shaped objects in loops (breakout.js: 2,230 lookups a frame).
- String equality is true for one string object and false for two different atoms (interned
  strings, unique per content in a runtime) without comparing characters: a game's
  `state === 'PLAYING'` and `typeof x !== 'undefined'` compare literals, which are atoms.
- A field of an object literal that is new to an ordinary extensible object is added directly
  (what JS_DefineProperty and JS_CreateProperty do for that case); anything else takes their
  path. With the string edit, a game that draws nothing steps 13% faster (getGameState()'s
  object literal is most of what is left of a step's fixed cost).
- A recorder for the env host's prefetching (envs/js/jsenv.h): while a runtime's puf_lines is set
  (puf_record), a call records its function's object, bytecode, constants and closure variables,
  and the allocator the arenas and blocks it takes and frees; otherwise each site costs one test
  of a field the runtime already has at hand. Nothing is read that the step would not read, and
  nothing the program sees changes.
"""


def _guessed(what, site):
    """An interpreter site (found by its own lines) whose property lookup tries the guess first."""
    return what, site, site.replace("find_own_property(&pr, ", "puf_find_own_property_ic(PUF_IC_SLOT(b, pc), &pr, ")


PATCHES = (
    ('OP_CMP: a double temporary',
     """\
                JSValue op1, op2;                         \\
                op1 = sp[-2];                             \\
""",
     """\
                JSValue op1, op2;                         \\
                double cmp_d1, cmp_d2;                    \\
                op1 = sp[-2];                             \\
"""),
    ('OP_CMP: numbers with a double compared inline',
     """\
                if (likely(JS_VALUE_IS_BOTH_INT(op1, op2))) {           \\
                    sp[-2] = js_bool(JS_VALUE_GET_INT(op1) binary_op JS_VALUE_GET_INT(op2)); \\
                    sp--;                                               \\
                } else {                                                \\
""",
     """\
                if (likely(JS_VALUE_IS_BOTH_INT(op1, op2))) {           \\
                    sp[-2] = js_bool(JS_VALUE_GET_INT(op1) binary_op JS_VALUE_GET_INT(op2)); \\
                    sp--;                                               \\
                } else if ((JS_TAG_IS_FLOAT64(JS_VALUE_GET_TAG(op1)) ||  \\
                            JS_TAG_IS_FLOAT64(JS_VALUE_GET_TAG(op2))) && \\
                           js_arith_to_float64(op1, &cmp_d1) &&         \\
                           js_arith_to_float64(op2, &cmp_d2)) {         \\
                    sp[-2] = js_bool(cmp_d1 binary_op cmp_d2);          \\
                    sp--;                                               \\
                } else {                                                \\
"""),
    ('JS_FreeValue inlined inside the engine',
     """\
#define JS_GC_MARK(p)   (js_rc(p)->mark)
""",
     """\
#define JS_GC_MARK(p)   (js_rc(p)->mark)
static void js_free_value_rt(JSRuntime *rt, JSValue v);
static inline __attribute__((always_inline)) void js_free_value_inline(JSRuntime *rt, JSValue v)
{
    if (JS_VALUE_HAS_REF_COUNT(v)) {
        void *p = JS_VALUE_GET_PTR(v);
        if (--JS_REF_COUNT(p) <= 0)
            js_free_value_rt(rt, v);
    }
}
#define JS_FreeValueRT(rt, v) js_free_value_inline((rt), (v))
#define JS_FreeValue(ctx, v) js_free_value_inline((ctx)->rt, (v))
"""),
    ('the exported JS_FreeValueRT keeps its name',
     'void JS_FreeValueRT(JSRuntime *rt, JSValue v)\n{',
     'void (JS_FreeValueRT)(JSRuntime *rt, JSValue v)\n{'),
    ('the exported JS_FreeValue keeps its name',
     'void JS_FreeValue(JSContext *ctx, JSValue v)\n{',
     'void (JS_FreeValue)(JSContext *ctx, JSValue v)\n{'),
    ('puf_find_own_property_ic',
     """\
/* Release a counted reference an open var_ref held on the coroutine
""",
     """\
/* puffgpu: find_own_property with a guess, the index found last at this bytecode position. The
   guess is used only when the shape's property at that index has this atom: a shape holds each
   atom once, so a checked guess is what find_own_property returns. One table for the process,
   indexed by the position within its function and the function's length, so that every runtime
   running the same game shares the same few hot lines instead of a table of its own (with 64
   runtimes on a core, per-runtime tables were 16% of a step's cache misses). It holds hints
   only: runtimes on other threads read and write it (relaxed, whole 16-bit entries), and a
   stale or foreign entry costs one comparison. */
#define PUF_IC_SIZE 4096
static uint16_t puf_ic[PUF_IC_SIZE];
#define PUF_IC_SLOT(b, pc) (&puf_ic[((uint32_t)((pc) - (b)->byte_code_buf) * 0x9E3779B1u + \
                                     (uint32_t)(b)->byte_code_len * 0x85EBCA6Bu) >> 20])
static inline JSShapeProperty *puf_find_own_property_ic(uint16_t *slot, JSProperty **ppr,
                                                        JSObject *p, JSAtom atom)
{
    JSShape *sh = p->shape;
    uint32_t i = __atomic_load_n(slot, __ATOMIC_RELAXED);
    JSShapeProperty *pr;
    if (likely(i < (uint32_t)sh->prop_count)) {
        pr = &get_shape_prop(sh)[i];
        if (likely(pr->atom == atom)) {
            *ppr = &p->prop[i];
            return pr;
        }
    }
    pr = find_own_property(ppr, p, atom);
    if (pr && pr - get_shape_prop(sh) < 0xffff)
        __atomic_store_n(slot, (uint16_t)(pr - get_shape_prop(sh)), __ATOMIC_RELAXED);
    return pr;
}

/* puffgpu, for the env's C host (envs/js/jsenv.h): the value of obj's own data property atom,
   found with the guess *slot; when write, only if it is writable. NULL for anything else (no such
   own property, an accessor, a property the engine keeps specially), where the caller takes the
   engine's general path. Reading the value or replacing it through the pointer is what the
   engine's own fast paths do for such a property. */
JSValue *puf_own_data(JSValueConst obj, JSAtom atom, uint16_t *slot, int write)
{
    JSShapeProperty *prs;
    JSProperty *pr;
    int mask = write ? JS_PROP_TMASK | JS_PROP_WRITABLE | JS_PROP_LENGTH : JS_PROP_TMASK;
    if (JS_VALUE_GET_TAG(obj) != JS_TAG_OBJECT)
        return NULL;
    prs = puf_find_own_property_ic(slot, &pr, JS_VALUE_GET_OBJ(obj), atom);
    if (!prs || (prs->flags & mask) != (write ? JS_PROP_WRITABLE : 0))
        return NULL;
    return &pr->u.value;
}

/* Release a counted reference an open var_ref held on the coroutine
"""),
    _guessed('OP_get_field with guesses', """\
                        prs = find_own_property(&pr, p, atom);
                        if (prs) {
                            /* found */
                            if (unlikely(prs->flags & JS_PROP_TMASK))
                                goto get_field_slow_path;
"""),
    _guessed('OP_get_field2 with guesses', """\
                        prs = find_own_property(&pr, p, atom);
                        if (prs) {
                            /* found */
                            if (unlikely(prs->flags & JS_PROP_TMASK))
                                goto get_field2_slow_path;
"""),
    _guessed('OP_put_field with guesses', """\
                    prs = find_own_property(&pr, p, atom);
                    if (!prs)
                        goto put_field_slow_path;
"""),
    ('puf_get_global_var',
     """\
/* construct a reference to a global variable */
""",
     """\
/* puffgpu: JS_GetGlobalVar with puf_find_own_property_ic's guesses for its two fast lookups */
static inline __attribute__((always_inline))
JSValue puf_get_global_var(JSContext *ctx, uint16_t *slot, JSAtom prop, bool throw_ref_error)
{
    JSShapeProperty *prs;
    JSProperty *pr;
    prs = puf_find_own_property_ic(slot, &pr, JS_VALUE_GET_OBJ(ctx->global_var_obj), prop);
    if (prs) {
        if (likely(!JS_IsUninitialized(pr->u.value)))
            return js_dup(pr->u.value);
    } else {
        prs = puf_find_own_property_ic(slot, &pr, JS_VALUE_GET_OBJ(ctx->global_obj), prop);
        if (prs && likely((prs->flags & JS_PROP_TMASK) == 0))
            return js_dup(pr->u.value);
    }
    return JS_GetGlobalVar(ctx, prop, throw_ref_error);
}

/* construct a reference to a global variable */
"""),
    ('string equality: the same string, or two different atoms',
     """\
static bool js_string_eq(JSString *p1, JSString *p2) {
    if (p1->len != p2->len)
""",
     """\
static bool js_string_eq(JSString *p1, JSString *p2) {
    /* puffgpu: a string equals itself; two different atoms (interned strings: one per content
       in a runtime) differ */
    if (p1 == p2)
        return true;
    if (p1->atom_type == JS_ATOM_TYPE_STRING && p2->atom_type == JS_ATOM_TYPE_STRING)
        return false;
    if (p1->len != p2->len)
"""),
    ('OP_define_field: a new field of an ordinary object added directly',
     """\
                ret = JS_DefinePropertyValue(ctx, sp[-2], atom, sp[-1],
                                             JS_PROP_C_W_E | JS_PROP_THROW);
                sp--;
""",
     """\
                /* puffgpu: a field new to an ordinary extensible object (an object literal's):
                   what JS_DefineProperty and JS_CreateProperty do for it, without their tests */
                if (JS_VALUE_GET_TAG(sp[-2]) == JS_TAG_OBJECT) {
                    JSObject *p = JS_VALUE_GET_OBJ(sp[-2]);
                    JSProperty *pr;
                    if (p->class_id == JS_CLASS_OBJECT && !p->is_exotic && p->extensible &&
                        !find_own_property(&pr, p, atom)) {
                        pr = add_property(ctx, p, atom, JS_PROP_C_W_E);
                        if (unlikely(!pr))
                            goto exception;
                        pr->u.value = sp[-1];
                        sp--;
                        BREAK;
                    }
                }
                ret = JS_DefinePropertyValue(ctx, sp[-2], atom, sp[-1],
                                             JS_PROP_C_W_E | JS_PROP_THROW);
                sp--;
"""),
    ('OP_get_var with guesses',
     """\
                val = JS_GetGlobalVar(ctx, atom, opcode - OP_get_var_undef);
""",
     """\
                val = puf_get_global_var(ctx, PUF_IC_SLOT(b, pc), atom, opcode - OP_get_var_undef);
"""),
    ('the runtime records the lines a step touches',
     """\
struct JSRuntime {
    JSMallocFunctions mf;
""",
     """\
struct JSRuntime {
    JSMallocFunctions mf;
    /* puffgpu: while not NULL, the lines the runtime touches first are recorded here
       (puf_record), for the env host to prefetch before the runtime's next step */
    uintptr_t *puf_lines;
    int puf_n, puf_cap;
"""),
    ('the recorder',
     """\
static void *js_arena_malloc(JSRuntime *rt, size_t size)
{
""",
     """\
/* puffgpu: the recorder (struct JSRuntime's puf_lines). A line is kept when it differs from the
   one recorded last; the host sorts out repeats after the step. Recording changes nothing else. */
static void puf_rec(JSRuntime *rt, const void *a)
{
    uintptr_t line = (uintptr_t)a & ~(uintptr_t)63;
    if (rt->puf_lines == NULL || rt->puf_n >= rt->puf_cap || !a ||
        (rt->puf_n > 0 && rt->puf_lines[rt->puf_n - 1] == line))
        return;
    rt->puf_lines[rt->puf_n++] = line;
}

static void puf_rec_range(JSRuntime *rt, const void *a, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        puf_rec(rt, (const uint8_t *)a + i);
    if (n)
        puf_rec(rt, (const uint8_t *)a + n - 1);
}

/* Starts recording into lines or, lines NULL, stops: the number of lines recorded since the start. */
int puf_record(JSRuntime *rt, uintptr_t *lines, int cap)
{
    int n = rt->puf_n;
    rt->puf_lines = lines;
    rt->puf_cap = cap;
    rt->puf_n = 0;
    return n;
}

static void *js_arena_malloc(JSRuntime *rt, size_t size)
{
"""),
    ('the allocator records its arenas',
     """\
        block_idx = ar->first_free_block;
""",
     """\
        if (unlikely(rt->puf_lines != NULL)) {
            puf_rec(rt, head);
            puf_rec(rt, ar);
            puf_rec(rt, arena_get_block(ar, ar->first_free_block, block_size));
        }
        block_idx = ar->first_free_block;
"""),
    ('the allocator records the arenas it frees into',
     """\
        b->u.free_next = ar->first_free_block;
""",
     """\
        if (unlikely(rt->puf_lines != NULL))
            puf_rec(rt, ar);
        b->u.free_next = ar->first_free_block;
"""),
    ('puf_rec_call',
     """\
static bool needs_backtrace(JSValue exc)
""",
     """\
/* puffgpu: what a call of function object p touches first: the object, its bytecode (the
   function's record, its code, constants) and the variables its closure reads */
static __attribute__((noinline)) void puf_rec_call(JSRuntime *rt, JSObject *p)
{
    puf_rec(rt, p);
    puf_rec(rt, &rt->class_array[p->class_id]);
    if (p->class_id != JS_CLASS_BYTECODE_FUNCTION)
        return;
    JSFunctionBytecode *b = p->u.func.function_bytecode;
    puf_rec_range(rt, b, sizeof(*b));
    puf_rec_range(rt, b->byte_code_buf, b->byte_code_len < 2048 ? b->byte_code_len : 2048);
    if (b->cpool_count)
        puf_rec_range(rt, b->cpool, sizeof(JSValue) * (b->cpool_count < 32 ? b->cpool_count : 32));
    if (p->u.func.var_refs) {
        int n = b->closure_var_count < 32 ? b->closure_var_count : 32;
        puf_rec_range(rt, p->u.func.var_refs, sizeof(JSVarRef *) * n);
        for (int i = 0; i < n; i++) {
            JSVarRef *v = p->u.func.var_refs[i];
            if (v) {
                puf_rec(rt, v);
                puf_rec(rt, v->pvalue);
            }
        }
    }
}

static bool needs_backtrace(JSValue exc)
"""),
    ('a call records its function',
     """\
    p = JS_VALUE_GET_OBJ(func_obj);
    if (unlikely(p->class_id != JS_CLASS_BYTECODE_FUNCTION)) {
        JSClassCall *call_func;
        call_func = rt->class_array[p->class_id].call;
""",
     """\
    p = JS_VALUE_GET_OBJ(func_obj);
    if (unlikely(rt->puf_lines != NULL))
        puf_rec_call(rt, p);
    if (unlikely(p->class_id != JS_CLASS_BYTECODE_FUNCTION)) {
        JSClassCall *call_func;
        call_func = rt->class_array[p->class_id].call;
"""),
)
