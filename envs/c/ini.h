/* ini.h — PufferLib 5.0's config dictionary and ini reader, as puffgpu hosts them.
 *
 * Written here from the 5.0 interface (PufferLib's src/ini.h at 64da1a6b): the same type names,
 * fields and function signatures, so an env that uses them compiles against this file and
 * against PufferLib's own ini.h unchanged.
 *
 *   Dict      a named list of key -> (number, string, number list) items; an ini section, an
 *             env's kwargs ([env] section) or the log that puf_log fills. C-allocated: it grows
 *             with realloc, so a host must create it with these functions, never hand one in.
 *   dict_get(dict, key)      the value as a double (a missing key is an error, see below)
 *   dict_set(dict, key, v)   sets or adds key; returns its item
 *   dict_get_str / dict_set_str, dict_find, dict_copy, dict_clear
 *   Ini, puf_ini_load_file, puf_ini_get, puf_ini_get_str, puf_ini_get_list, puf_ini_put,
 *   puf_ini_apply_arg, puf_ini_load_env, puf_ini_write, puf_ini_free   (the file reader)
 *
 * Values: true/false read as 1/0, `_` digit separators are dropped, `a, b, c` is also a number
 * list (item->values, item->len; item->value is its first element); every item keeps its text.
 *
 * Errors: PufferLib prints the missing key and exits. puffgpu's host must not exit the Python
 * process, so a host may arm `puf_dict_missing_jump` around puf_init: a missing key then
 * records its name in `puf_dict_missing_key` and jumps back to the host, which reports it.
 * Without a jump target (plain C programs) it prints and exits as PufferLib does.
 */
#ifndef PUFFGPU_INI_H
#define PUFFGPU_INI_H

#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUF_DICT_MAX_KEY 128

typedef struct {
    char key[PUF_DICT_MAX_KEY];
    char* str;       /* the value's text (NULL for values set as numbers) */
    double value;    /* the number (0 if the text is not a number) */
    double* values;  /* [len] for comma lists, else NULL */
    int len;
} DictItem;

typedef struct {
    char* name;      /* section name, for messages */
    DictItem* items; /* [cap], size used */
    int size;
    int cap;
} Dict;

/* ---- puffgpu: a missing key jumps back to the host instead of exiting ---- */
static jmp_buf* puf_dict_missing_jump;
static char puf_dict_missing_key[PUF_DICT_MAX_KEY + 64];

static void puf_dict_fail(const char* what) {
    fprintf(stderr, "%s\n", what);
    exit(1);
}

static void puf_dict_missing(Dict* dict, const char* key, const char* kind) {
    snprintf(puf_dict_missing_key, sizeof(puf_dict_missing_key), "%s", key);
    if (puf_dict_missing_jump != NULL) longjmp(*puf_dict_missing_jump, 1);
    fprintf(stderr, "missing %s [%s] %s\n", kind, dict->name ? dict->name : "?", key);
    exit(1);
}

static inline char* dict_strdup(const char* s) {
    size_t n = strlen(s) + 1;
    char* out = (char*)malloc(n);
    if (out == NULL) puf_dict_fail("dict_strdup: out of memory");
    memcpy(out, s, n);
    return out;
}

static inline DictItem* dict_find(Dict* dict, const char* key) {
    for (int i = 0; i < dict->size; i++) {
        if (strcmp(dict->items[i].key, key) == 0) return &dict->items[i];
    }
    return NULL;
}

static inline void dict_reserve(Dict* dict, int cap) {
    if (cap <= dict->cap) return;
    DictItem* items = (DictItem*)realloc(dict->items, (size_t)cap * sizeof(DictItem));
    if (items == NULL) puf_dict_fail("dict_reserve: out of memory");
    memset(items + dict->cap, 0, (size_t)(cap - dict->cap) * sizeof(DictItem));
    dict->items = items;
    dict->cap = cap;
}

static inline DictItem* dict_insert(Dict* dict, const char* key) {
    if (strlen(key) >= PUF_DICT_MAX_KEY) {
        fprintf(stderr, "dict key longer than %d characters: %s\n", PUF_DICT_MAX_KEY - 1, key);
        exit(1);
    }
    if (dict->size == dict->cap) dict_reserve(dict, dict->cap > 0 ? 2 * dict->cap : 8);
    DictItem* item = &dict->items[dict->size++];
    memset(item, 0, sizeof(*item));
    memcpy(item->key, key, strlen(key) + 1);
    return item;
}

/* The item for key, added (zeroed) if missing. */
static inline DictItem* dict_item(Dict* dict, const char* key) {
    DictItem* item = dict_find(dict, key);
    return item != NULL ? item : dict_insert(dict, key);
}

static inline void dict_item_clear(DictItem* item) {
    free(item->str);
    free(item->values);
    item->str = NULL;
    item->values = NULL;
    item->len = 0;
}

static inline double dict_get(Dict* dict, const char* key) {
    DictItem* item = dict_find(dict, key);
    if (item == NULL) {
        puf_dict_missing(dict, key, "key");
        return 0.0;
    }
    return item->value;
}

static inline DictItem* dict_set(Dict* dict, const char* key, double value) {
    DictItem* item = dict_item(dict, key);
    dict_item_clear(item);
    item->value = value;
    return item;
}

static inline const char* dict_get_str(Dict* dict, const char* key) {
    DictItem* item = dict_find(dict, key);
    if (item == NULL || item->str == NULL) {
        puf_dict_missing(dict, key, "string");
        return "";
    }
    return item->str;
}

static inline DictItem* dict_set_str(Dict* dict, const char* key, const char* value) {
    DictItem* item = dict_item(dict, key);
    dict_item_clear(item);
    item->str = dict_strdup(value);
    return item;
}

/* dst becomes a deep copy of src (dst's old contents are not freed). */
static inline void dict_copy(Dict* dst, Dict* src) {
    memset(dst, 0, sizeof(*dst));
    if (src->name != NULL) dst->name = dict_strdup(src->name);
    if (src->size > 0) dict_reserve(dst, src->size);
    for (int i = 0; i < src->size; i++) {
        const DictItem* s = &src->items[i];
        DictItem* d = dict_insert(dst, s->key);
        d->value = s->value;
        d->len = s->len;
        if (s->str != NULL) d->str = dict_strdup(s->str);
        if (s->values != NULL && s->len > 0) {
            d->values = (double*)malloc((size_t)s->len * sizeof(double));
            if (d->values == NULL) puf_dict_fail("dict_copy: out of memory");
            memcpy(d->values, s->values, (size_t)s->len * sizeof(double));
        }
    }
}

/* Frees everything the dict owns and zeroes it. */
static inline void dict_clear(Dict* dict) {
    for (int i = 0; i < dict->size; i++) dict_item_clear(&dict->items[i]);
    free(dict->name);
    free(dict->items);
    memset(dict, 0, sizeof(*dict));
}

/* ---- The ini reader: sections of key = value lines ------------------------------------------ */

typedef struct {
    Dict* sections;  /* [num_sections] */
    int num_sections;
} Ini;

static char* puf_ini_strip(char* s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* Cuts the line at the first ';' or '#' outside quotes. */
static void puf_ini_cut_comment(char* s) {
    char quote = 0;
    for (; *s; s++) {
        if (quote) {
            if (*s == quote) quote = 0;
        } else if (*s == '"' || *s == '\'') {
            quote = *s;
        } else if (*s == ';' || *s == '#') {
            *s = '\0';
            return;
        }
    }
}

static void puf_ini_unquote(char* s) {
    size_t n = strlen(s);
    if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
        memmove(s, s + 1, n - 2);
        s[n - 2] = '\0';
    }
}

/* A number: true/false, or a float with `_` separators. Returns 0 if the text is not one. */
static int puf_ini_number(const char* text, double* out) {
    char buf[256];
    size_t j = 0;
    for (const char* p = text; *p && j + 1 < sizeof(buf); p++) {
        if (*p != '_' && !isspace((unsigned char)*p)) buf[j++] = (char)tolower((unsigned char)*p);
    }
    buf[j] = '\0';
    if (strcmp(buf, "true") == 0) { *out = 1.0; return 1; }
    if (strcmp(buf, "false") == 0) { *out = 0.0; return 1; }
    if (buf[0] == '\0') return 0;
    char* end = NULL;
    double v = strtod(buf, &end);
    if (end == NULL || *end != '\0') return 0;
    *out = v;
    return 1;
}

/* Fills item's number fields from its text: a number, or a comma list of numbers. */
static void puf_ini_parse_item(DictItem* item, const char* text) {
    double v;
    if (puf_ini_number(text, &v)) item->value = v;
    if (strchr(text, ',') == NULL) return;
    int cap = 1;
    for (const char* p = text; *p; p++) cap += *p == ',';
    double* values = (double*)malloc((size_t)cap * sizeof(double));
    if (values == NULL) puf_dict_fail("ini: out of memory");
    int n = 0;
    const char* p = text;
    while (*p) {
        const char* comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char part[256];
        if (len >= sizeof(part)) len = sizeof(part) - 1;
        memcpy(part, p, len);
        part[len] = '\0';
        if (!puf_ini_number(part, &values[n])) {
            free(values);  /* not a number list: the text alone is the value */
            return;
        }
        n++;
        if (comma == NULL) break;
        p = comma + 1;
    }
    item->values = values;
    item->len = n;
    item->value = values[0];
}

/* The section named `name`; created if `add`, else a missing one is an error. */
static Dict* puf_ini_section(Ini* ini, const char* name, int add) {
    for (int i = 0; i < ini->num_sections; i++) {
        if (strcmp(ini->sections[i].name, name) == 0) return &ini->sections[i];
    }
    if (!add) {
        fprintf(stderr, "config error: missing section [%s]\n", name);
        exit(1);
    }
    Dict* sections = (Dict*)realloc(ini->sections, (size_t)(ini->num_sections + 1) * sizeof(Dict));
    if (sections == NULL) puf_dict_fail("ini: out of memory");
    ini->sections = sections;
    Dict* dict = &sections[ini->num_sections++];
    memset(dict, 0, sizeof(*dict));
    dict->name = dict_strdup(name);
    return dict;
}

static DictItem* puf_ini_set(Dict* dict, const char* key, const char* text) {
    DictItem* item = dict_set_str(dict, key, text);
    puf_ini_parse_item(item, text);
    return item;
}

static inline double puf_ini_get(Ini* ini, const char* section, const char* key) {
    return dict_get(puf_ini_section(ini, section, 0), key);
}

static inline const char* puf_ini_get_str(Ini* ini, const char* section, const char* key) {
    return dict_get_str(puf_ini_section(ini, section, 0), key);
}

/* Up to max numbers of a list key into out; a scalar is a list of one, a missing key of none. */
static inline int puf_ini_get_list(Ini* ini, const char* section, const char* key, double* out,
                                   int max) {
    DictItem* item = dict_find(puf_ini_section(ini, section, 0), key);
    if (item == NULL) return 0;
    int n = item->len > 0 ? item->len : 1;
    if (n > max) {
        fprintf(stderr, "config error: [%s] %s has %d values, at most %d allowed\n", section, key,
                n, max);
        exit(1);
    }
    for (int i = 0; i < n; i++) out[i] = item->len > 0 ? item->values[i] : item->value;
    return n;
}

/* Overrides an existing "section.key" (the last dot splits); an unknown key is an error. */
static inline void puf_ini_put(Ini* ini, const char* full_key, const char* text) {
    const char* dot = strrchr(full_key, '.');
    if (dot == NULL) {
        fprintf(stderr, "expected section.key, got %s\n", full_key);
        exit(1);
    }
    char section[128], key[PUF_DICT_MAX_KEY];
    snprintf(section, sizeof(section), "%.*s", (int)(dot - full_key), full_key);
    snprintf(key, sizeof(key), "%s", dot + 1);
    Dict* dict = puf_ini_section(ini, section, 0);
    if (dict_find(dict, key) == NULL) {
        fprintf(stderr, "missing key [%s] %s\n", section, key);
        exit(1);
    }
    puf_ini_set(dict, key, text);
}

/* One command-line argument: --key=value or --section.key=value (a bare --key is
 * default_section, a flag without =value means true, dashes in the name are underscores). */
static inline void puf_ini_apply_arg(Ini* ini, const char* default_section, const char* arg,
                                     int index) {
    if (arg[0] != '-' || arg[1] != '-') {
        fprintf(stderr, "argument %d: expected --section.key=value, got '%s'\n", index, arg);
        exit(1);
    }
    char name[2048];
    snprintf(name, sizeof(name), "%s", arg + 2);
    const char* value = "true";
    char* eq = strchr(name, '=');
    if (eq != NULL) {
        *eq = '\0';
        value = eq + 1;
    }
    for (char* p = name; *p; p++) if (*p == '-') *p = '_';
    if (name[0] == '\0') {
        fprintf(stderr, "argument %d: empty key\n", index);
        exit(1);
    }
    char full[4096];
    if (strchr(name, '.') != NULL) snprintf(full, sizeof(full), "%s", name);
    else snprintf(full, sizeof(full), "%s.%s", default_section, name);
    puf_ini_put(ini, full, value);
}

/* Reads path into ini (later files override earlier keys). Errors name the file and line. */
static void puf_ini_load_file(Ini* ini, const char* path) {
    FILE* fp = fopen(path, "r");
    if (fp == NULL) {
        fprintf(stderr, "could not open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    Dict* section = NULL;
    char line[4096];
    for (int n = 1; fgets(line, sizeof(line), fp) != NULL; n++) {
        puf_ini_cut_comment(line);
        char* s = puf_ini_strip(line);
        if (*s == '\0') continue;
        size_t len = strlen(s);
        if (s[0] == '[' && len >= 3 && s[len - 1] == ']') {
            s[len - 1] = '\0';
            section = puf_ini_section(ini, puf_ini_strip(s + 1), 1);
            continue;
        }
        char* eq = strchr(s, '=');
        if (section == NULL || eq == NULL) {
            fprintf(stderr, "%s:%d: expected %s\n", path, n,
                    section == NULL ? "a [section] before key = value" : "key = value");
            exit(1);
        }
        *eq = '\0';
        char* key = puf_ini_strip(s);
        char* value = puf_ini_strip(eq + 1);
        puf_ini_unquote(value);
        if (*key == '\0') {
            fprintf(stderr, "%s:%d: empty key\n", path, n);
            exit(1);
        }
        puf_ini_set(section, key, value);
    }
    fclose(fp);
}

/* config/default.ini, then config/<env_name>.ini, base.env_name, then the arguments. */
static inline void puf_ini_load_env(Ini* ini, const char* env_name, int argc, char** argv) {
    puf_ini_load_file(ini, "config/default.ini");
    if (strcmp(env_name, "default") != 0) {
        char path[1024];
        snprintf(path, sizeof(path), "config/%s.ini", env_name);
        puf_ini_load_file(ini, path);
    }
    puf_ini_put(ini, "base.env_name", env_name);
    for (int i = 0; i < argc; i++) puf_ini_apply_arg(ini, "base", argv[i], i);
}

static inline void puf_ini_write(FILE* fp, Ini* ini) {
    for (int s = 0; s < ini->num_sections; s++) {
        Dict* dict = &ini->sections[s];
        fprintf(fp, "\n[%s]\n", dict->name);
        for (int i = 0; i < dict->size; i++) {
            DictItem* item = &dict->items[i];
            fprintf(fp, "%s = ", item->key);
            if (item->len > 0) {
                for (int j = 0; j < item->len; j++) fprintf(fp, "%s%.17g", j ? "," : "", item->values[j]);
            } else if (item->str != NULL) {
                fputs(item->str, fp);
            } else {
                fprintf(fp, "%.17g", item->value);
            }
            fputc('\n', fp);
        }
    }
}

static inline void puf_ini_free(Ini* ini) {
    for (int i = 0; i < ini->num_sections; i++) dict_clear(&ini->sections[i]);
    free(ini->sections);
    memset(ini, 0, sizeof(*ini));
}

#endif /* PUFFGPU_INI_H */
