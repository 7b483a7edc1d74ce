/* jsheap.h — the memory of each env's JS runtime (included by envs/js/jsenv.h).
 *
 * QuickJS-ng serves every allocation of up to 512 bytes from 4 KB arenas of one size class, which
 * it takes from the malloc functions its runtime was created with; bigger blocks come from them
 * directly. Those arenas hold nearly all of a game's objects, shapes, closures and small bytecode
 * (about 90 pages for a light game). Here they come from 512 KB slices that each env takes from one
 * region of address space reserved for the process and marked for transparent huge pages (Linux),
 * so an env's objects sit in a few contiguous 2 MB pages shared by four envs instead of 4 KB pages
 * spread through the process heap: with many envs on a core, each step of each env no longer walks
 * the page tables for every page it touches (measured: flappy_bird.js +8% per CPU second at 64
 * envs on a core, +19% at 256, +12% at 1,024; nothing at 1). Every other request goes to malloc.
 *
 * A runtime runs on one thread at a time, so its pages need no lock; taking a slice from the
 * region, or handing an env's slices back when it closes, takes the process-wide lock. Where the
 * region cannot be reserved (another OS, a strict overcommit policy) everything goes to malloc.
 */
#ifndef PUF_JSHEAP_H
#define PUF_JSHEAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#define JSH_REGION 1
#elif defined(__APPLE__)
#include <malloc/malloc.h>
#endif

#define JSH_PAGE 4096                 /* QuickJS-ng's arena size (JS_ARENA_SIZE) */
#define JSH_SLICE ((size_t)512 << 10) /* what an env takes from the region at a time */
#define JSH_HUGE ((size_t)2 << 20)

typedef struct JsHeap {
    unsigned char *bump, *end; /* the rest of the newest slice */
    void* free_pages;          /* pages given back, linked through their first word */
    void** slices;             /* the slices held, handed back at close */
    int num_slices, cap_slices;
} JsHeap;

static struct {
    unsigned char *base, *end, *bump; /* the reserved region; bump: never handed out beyond */
    void** free_slices;               /* slices of closed envs */
    int num_free, cap_free, tried;
    char busy;
} jsh;

static void jsh_lock(void) {
    while (__atomic_test_and_set(&jsh.busy, __ATOMIC_ACQUIRE)) {
    }
}
static void jsh_unlock(void) { __atomic_clear(&jsh.busy, __ATOMIC_RELEASE); }

static inline int jsh_owns(const void* p) {
    return (const unsigned char*)p >= jsh.base && (const unsigned char*)p < jsh.end;
}

/* Reserves the region once: address space only (MAP_NORESERVE), memory comes as pages are used. */
static void jsh_reserve(void) {
#ifdef JSH_REGION
    jsh.tried = 1;
    for (size_t gb = 64; gb >= 1; gb /= 4) {
        size_t len = gb << 30;
        void* m = mmap(NULL, len + JSH_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) continue;
        unsigned char* b = (unsigned char*)(((uintptr_t)m + JSH_HUGE - 1) & ~(uintptr_t)(JSH_HUGE - 1));
#ifdef MADV_HUGEPAGE
        madvise(b, len, MADV_HUGEPAGE); /* a hint: without THP the pages are 4 KB, still contiguous */
#endif
        jsh.base = jsh.bump = b;
        jsh.end = b + len;
        return;
    }
#endif
    jsh.tried = 1;
}

static int jsh_new_slice(JsHeap* h) {
    if (h->num_slices == h->cap_slices) {
        int cap = h->cap_slices ? 2 * h->cap_slices : 8;
        void** s = (void**)realloc(h->slices, sizeof(void*) * (size_t)cap);
        if (s == NULL) return 0;
        h->slices = s;
        h->cap_slices = cap;
    }
    unsigned char* s = NULL;
    jsh_lock();
    if (!jsh.tried) jsh_reserve();
    if (jsh.num_free > 0) s = (unsigned char*)jsh.free_slices[--jsh.num_free];
    else if (jsh.base != NULL && (size_t)(jsh.end - jsh.bump) >= JSH_SLICE) { s = jsh.bump; jsh.bump += JSH_SLICE; }
    jsh_unlock();
    if (s == NULL) return 0;
    h->slices[h->num_slices++] = s;
    h->bump = s;
    h->end = s + JSH_SLICE;
    return 1;
}

static void* jsh_page(JsHeap* h) {
    void* p = h->free_pages;
    if (p != NULL) {
        memcpy(&h->free_pages, p, sizeof(void*));
        return p;
    }
    if (h->bump == h->end && !jsh_new_slice(h)) return NULL;
    p = h->bump;
    h->bump += JSH_PAGE;
    return p;
}

static inline int jsh_page_size(size_t size) { return size > JSH_PAGE / 2 && size <= JSH_PAGE; }

static void* jsh_malloc(void* opaque, size_t size) {
    if (jsh_page_size(size)) {
        void* p = jsh_page((JsHeap*)opaque);
        if (p != NULL) return p;
    }
    return malloc(size);
}

static void* jsh_calloc(void* opaque, size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    if (jsh_page_size(count * size)) {
        void* p = jsh_page((JsHeap*)opaque);
        if (p != NULL) return memset(p, 0, count * size);
    }
    return calloc(count, size);
}

static void jsh_free(void* opaque, void* ptr) {
    if (ptr == NULL) return;
    if (jsh_owns(ptr)) {
        JsHeap* h = (JsHeap*)opaque;
        memcpy(ptr, &h->free_pages, sizeof(void*));
        h->free_pages = ptr;
        return;
    }
    free(ptr);
}

static size_t jsh_usable_size(const void* ptr) {
    if (jsh_owns(ptr)) return JSH_PAGE;
#if defined(__linux__)
    return malloc_usable_size((void*)ptr);
#elif defined(__APPLE__)
    return malloc_size(ptr);
#else
    return 0;
#endif
}

static void* jsh_realloc(void* opaque, void* ptr, size_t size) {
    if (ptr == NULL) return jsh_malloc(opaque, size);
    if (!jsh_owns(ptr)) return realloc(ptr, size);
    if (size == 0) {
        jsh_free(opaque, ptr);
        return NULL;
    }
    if (jsh_page_size(size)) return ptr;
    void* q = jsh_malloc(opaque, size);
    if (q == NULL) return NULL;
    memcpy(q, ptr, size < JSH_PAGE ? size : JSH_PAGE);
    jsh_free(opaque, ptr);
    return q;
}

static const JSMallocFunctions jsh_functions = {jsh_calloc, jsh_malloc, jsh_free, jsh_realloc, jsh_usable_size};

/* A runtime whose pages come from its own slices (JS_FreeRuntime, then jsh_close). */
static JSRuntime* jsh_new_runtime(JsHeap** heap) {
    *heap = (JsHeap*)calloc(1, sizeof(JsHeap));
    if (*heap == NULL) return NULL;
    return JS_NewRuntime2(&jsh_functions, *heap);
}

/* After JS_FreeRuntime: the env's slices go back to the region for the next env. */
static void jsh_close(JsHeap* h) {
    if (h == NULL) return;
    jsh_lock();
    if (jsh.num_free + h->num_slices > jsh.cap_free) {
        int cap = jsh.num_free + h->num_slices + 64;
        void** s = (void**)realloc(jsh.free_slices, sizeof(void*) * (size_t)cap);
        if (s != NULL) { jsh.free_slices = s; jsh.cap_free = cap; }
    }
    for (int i = 0; i < h->num_slices && jsh.num_free < jsh.cap_free; i++) jsh.free_slices[jsh.num_free++] = h->slices[i];
    jsh_unlock();
    free(h->slices);
    free(h);
}

#endif /* PUF_JSHEAP_H */
