/* The builder.metallib._native extension: native fast paths for builder/metallib (native.py there).
 *
 * function_list.c  parse_function_list: the function list as checked columns
 * screen.c         screen_functions: which functions need verify's detailed checks
 * reflection.c     reflection_pieces: FlatBuffer sizes and canonical flags for a rewrite
 * runs.c           coalesce_runs: pieces of the source merged into runs to copy
 * find.c           find_header: the next metallib header in a file (the search for metallibs)
 * stems.c          generic_stems: the generic op or stem of every name (its caller
 *                  is builder/size/naming.py)
 * sha256.c         sha256_spans: module hashes on several threads (only when built with OpenSSL)
 * deflate_share.c  deflate_share: the download model's parallel zlib pass (only with zlib;
 *                  its caller is builder/size/download.py)
 *
 * Both only decide the plain, well-formed case quickly; every diagnostic stays in Python.
 */
#include "native.h"

static PyMethodDef methods[] = {
    {"parse_function_list", parse_function_list, METH_VARARGS,
     "parse_function_list(buffer, base, count, public, private, bitcode, reflection_list)\n"
     "-> tuple of 16 columns, or None\n\n"
     "buffer holds the function list from its u32 count on; base is its file offset. The four\n"
     "sections are (offset, size) pairs, reflection_list None when the file has no RLST. Columns\n"
     "(builder/metallib/table.py, COLUMNS): names, types, VERS tuples, the HASH payloads as one\n"
     "bytes object, entry offsets and sizes, OFFT and RFLT payload offsets in the entry, then the\n"
     "absolute offset and size of each function's public and private metadata piece, module and\n"
     "reflection piece. None when anything is not in the plain shape; the Python parser then\n"
     "reports the problem."},
    {"screen_functions", screen_functions, METH_VARARGS,
     "screen_functions(buffer, public_offsets, public_sizes, private_offsets, private_sizes,\n"
     "module_offsets, module_sizes, reflection_offsets, reflection_sizes) -> list[int]\n\n"
     "Indices of the functions whose module wrapper, metadata pieces or reflection piece are not in\n"
     "the common well-formed shape (verify checks those in detail)."},
    {"reflection_pieces", reflection_pieces, METH_VARARGS,
     "reflection_pieces(buffer, offsets, piece_sizes) -> (flatbuffer_sizes, canonical)\n\n"
     "Per reflection piece: the FlatBuffer's size without padding, and whether the piece's size\n"
     "field counts exactly its header, padding, FlatBuffer and ENDT (None/True without a piece)."},
    {"coalesce_runs", coalesce_runs, METH_VARARGS,
     "coalesce_runs(offsets, sizes) -> list of (start, length)\n\n"
     "The pieces merged where one ends where the next starts; empty pieces skipped."},
    {"find_header", find_header, METH_VARARGS,
     "find_header(fd, start, end) -> int\n\n"
     "The first file offset o in [start, end - 88] where the open file fd holds the magic MTLB and\n"
     "a header that passes the header checks (builder/metallib/embedded.py, plausible_header), or\n"
     "-1; the file is read with pread() without the GIL, nothing of it is mapped."},
    {"generic_stems", generic_stems, METH_VARARGS,
     "generic_stems(names, spellings, word_only, layouts, level) -> list of str, or None\n\n"
     "The generic op (level 0) or stem (level 1) of every name (builder/size/naming.py): dtype\n"
     "spellings found longest first, the word_only ones only between '_' or the ends; the head\n"
     "is the words before the first dtype or number, the stem the head and the later words that\n"
     "are no parameters, the op the head's words up to its first layout word. None when a name\n"
     "or word is not ASCII."},
#ifdef METALLIB_NATIVE_SHA256
    {"sha256_spans", sha256_spans, METH_VARARGS,
     "sha256_spans(buffer, offsets, sizes, threads, fd=-1) -> bytes\n\n"
     "The SHA-256 digests of buffer[offset:offset + size] for every span, concatenated in order,\n"
     "computed by OpenSSL on up to `threads` threads without the GIL. With fd, the open file that\n"
     "buffer maps, the spans are read from it with pread() instead of through the map."},
#endif
#ifdef METALLIB_NATIVE_ZLIB
    {"deflate_share", deflate_share, METH_VARARGS,
     "deflate_share(buffer, cuts, starts, level, window, step, spread, threads)\n"
     "-> (part_sizes, costs)\n\n"
     "The buffer compressed in parts (packed u64 cuts) as raw deflate, each primed with the\n"
     "window bytes before it and sync-flushed, on up to `threads` threads; each part's\n"
     "compressed bytes, and each segment's (packed u64 starts) share of them in bits, found by\n"
     "inflating `step` compressed bytes at a time, the bits of steps that decode to nothing spread\n"
     "over the next `spread` bytes (builder/size/download.py); step 0: part sizes only."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "builder.metallib._native",
    .m_doc = "Native fast paths for metallib-builder's container code (builder/metallib/native.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module_def);
#ifdef METALLIB_NATIVE_SHA256
    const int has_sha256 = 1;
#else
    const int has_sha256 = 0;
#endif
#ifdef METALLIB_NATIVE_ZLIB
    const int has_deflate = 1;
#else
    const int has_deflate = 0;
#endif
    if (m != NULL && (PyModule_AddIntConstant(m, "ABI", NATIVE_ABI) < 0 ||
                      PyModule_AddIntConstant(m, "HAS_SHA256", has_sha256) < 0 ||
                      PyModule_AddIntConstant(m, "HAS_DEFLATE", has_deflate) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
