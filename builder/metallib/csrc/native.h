/* Shared by the sources of the builder.metallib._native extension (see module.c). */
#ifndef METALLIB_NATIVE_H
#define METALLIB_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "pieces.h"

/* The result layout's number is stated once, as ABI in builder/metallib/native.py; CMake reads it
 * from there (cmake/MetallibNative.cmake) and passes it as -DNATIVE_ABI=<n>. */
#ifndef NATIVE_ABI
#error "NATIVE_ABI is not defined: build the extension with CMake (it reads builder/metallib/native.py)"
#endif

static inline uint16_t u16_at(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t u64_at(const unsigned char *p) { return (uint64_t)u32_at(p) | ((uint64_t)u32_at(p + 4) << 32); }

static inline int code_is(const unsigned char *p, const char *code) { return memcmp(p, code, 4) == 0; }

PyObject *parse_function_list(PyObject *module, PyObject *args);
PyObject *screen_functions(PyObject *module, PyObject *args);
PyObject *reflection_pieces(PyObject *module, PyObject *args);
PyObject *coalesce_runs(PyObject *module, PyObject *args);
PyObject *find_header(PyObject *module, PyObject *args);
PyObject *generic_stems(PyObject *module, PyObject *args);
#ifdef METALLIB_NATIVE_SHA256
PyObject *sha256_spans(PyObject *module, PyObject *args);
#endif
#ifdef METALLIB_NATIVE_ZLIB
PyObject *deflate_share(PyObject *module, PyObject *args);
#endif

#endif
