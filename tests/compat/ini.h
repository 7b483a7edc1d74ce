/* PufferLib 5.0's ini.h restated as declarations only (see pufferenv.h beside this file). */
#pragma once

#include <stdio.h>

#define PUF_DICT_MAX_KEY 128

typedef struct {
    char key[PUF_DICT_MAX_KEY];
    char* str;
    double value;
    double* values;
    int len;
} DictItem;

typedef struct {
    char* name;
    DictItem* items;
    int size;
    int cap;
} Dict;

typedef struct {
    Dict* sections;
    int num_sections;
} Ini;

char* dict_strdup(const char* s);
DictItem* dict_find(Dict* dict, const char* key);
void dict_reserve(Dict* dict, int cap);
DictItem* dict_insert(Dict* dict, const char* key);
DictItem* dict_item(Dict* dict, const char* key);
void dict_item_clear(DictItem* item);
double dict_get(Dict* dict, const char* key);
DictItem* dict_set(Dict* dict, const char* key, double value);
const char* dict_get_str(Dict* dict, const char* key);
DictItem* dict_set_str(Dict* dict, const char* key, const char* value);
void dict_copy(Dict* dst, Dict* src);
void dict_clear(Dict* dict);
double puf_ini_get(Ini* ini, const char* section, const char* key);
const char* puf_ini_get_str(Ini* ini, const char* section, const char* key);
int puf_ini_get_list(Ini* ini, const char* section, const char* key, double* out, int max);
void puf_ini_put(Ini* ini, const char* full_key, const char* raw);
void puf_ini_apply_arg(Ini* ini, const char* default_section, const char* arg, int idx);
void puf_ini_load_env(Ini* ini, const char* env_name, int argc, char** argv);
void puf_ini_write(FILE* fp, Ini* ini);
void puf_ini_free(Ini* ini);
