/* The function-list parser of the builder.metallib._native extension.
 *
 * parse_function_list(...) walks every entry of a function list, checks where its pieces and
 * module lie, and returns the results as parallel lists (columns), or None when anything is not
 * in the plain, well-formed shape. None is not an error: the Python parser
 * (builder/metallib/reference.py) then walks the list itself and raises MetallibFormatError with
 * the exact byte offset, so every diagnostic lives in one place and this file only has to be
 * right about the accepted case.
 *
 * Accepted: each entry is a u32 size, then tags up to an ENDT that ends exactly at the entry's
 * end; tags have a u16 length (u32 for RBUF, SARC, SBUF) and payloads inside the entry; NAME
 * (NUL-terminated, no NUL before the end, valid UTF-8), HASH (32 bytes) and OFFT (24 bytes)
 * present; TYPE, VERS (8), MDSZ (8) and RFLT (8) optional; no tag twice, known or not (Python
 * refuses a repeated tag, _refuse_repeated_tags); at most MAX_UNKNOWN unknown tags, skipped (they
 * stay in the entry bytes); the entries fill the list exactly. A name that is not valid UTF-8 or
 * holds a NUL is declined too: the Python walk collects it for verify (BadName). The span rules
 * are those of reference.py (_piece_spans, _module_spans, _reflection_spans).
 */
#include "native.h"

/* The result's columns, in the order of builder/metallib/table.py's COLUMNS (a test compares the
 * names). Each piece has an offsets and a bytes column, in Piece order from COL_ENTRY_OFFSETS. */
enum {
    COL_NAMES, COL_TYPES, COL_VERSIONS, COL_HASHES, COL_OFFT_REL, COL_RFLT_REL, COL_ENTRY_OFFSETS,
    COL_ENTRY_BYTES, COL_PUBLIC_MD_OFFSETS, COL_PUBLIC_MD_BYTES, COL_PRIVATE_MD_OFFSETS, COL_PRIVATE_MD_BYTES,
    COL_MODULE_OFFSETS, COL_MODULE_BYTES, COL_REFLECTION_OFFSETS, COL_REFLECTION_BYTES, COLUMNS
};
#define COL_OFFSETS(piece) (COL_ENTRY_OFFSETS + 2 * (piece))
#define COL_BYTES(piece) (COL_ENTRY_BYTES + 2 * (piece))

/* The offset columns are returned packed: a bytes object of one native-endian u64 per function
 * (ABSENT for a function without a reflection piece), which the table unpacks into a list only
 * when a command reads it. list and report never do, and 17,000 fewer ints per column is a
 * measurable share of their run time. The HASH payloads are one bytes object too. */
#define ABSENT UINT64_MAX
static int packed(int column)
{
    return column == COL_HASHES || (column >= COL_ENTRY_OFFSETS && (column - COL_ENTRY_OFFSETS) % 2 == 0);
}

/* A section of the file: absolute offset and size. */
typedef struct {
    uint64_t offset, size;
} Section;

/* Fields of one entry; offsets are relative to the list buffer. */
typedef struct {
    Py_ssize_t name_at, name_len, hash_at, offt_at, rflt_at, vers_at, mdsz_at;
    int type; /* -1: no TYPE tag (or an empty one) */
} Entry;

/* Unknown tags remembered per entry to refuse a repeat; an entry with more is declined. */
#define MAX_UNKNOWN 8

/* Walk the tags of the entry at [start, end); 0 when it is not in the accepted shape. */
static int walk_entry(const unsigned char *buf, Py_ssize_t start, Py_ssize_t end, Entry *e)
{
    Py_ssize_t pos = start + 4;
    e->name_at = e->hash_at = e->offt_at = e->rflt_at = e->vers_at = e->mdsz_at = -1;
    e->name_len = 0;
    e->type = -1;
    int seen_type = 0, unknown_count = 0;
    const unsigned char *unknown[MAX_UNKNOWN];
    for (;;) {
        if (pos + 4 > end)
            return 0;
        const unsigned char *code = buf + pos;
        if (code_is(code, "ENDT"))
            return pos + 4 == end && e->name_at >= 0 && e->hash_at >= 0 && e->offt_at >= 0;
        Py_ssize_t length, payload;
        if (code_is(code, "RBUF") || code_is(code, "SARC") || code_is(code, "SBUF")) {
            if (pos + 8 > end)
                return 0;
            length = u32_at(buf + pos + 4);
            payload = pos + 8;
        } else {
            if (pos + 6 > end)
                return 0;
            length = u16_at(buf + pos + 4);
            payload = pos + 6;
        }
        if (length > end - payload)
            return 0;
        Py_ssize_t *slot = NULL;
        Py_ssize_t want = -1;
        if (code_is(code, "NAME")) {
            if (e->name_at >= 0 || length == 0 || buf[payload + length - 1] != 0 ||
                memchr(buf + payload, 0, length - 1) != NULL)
                return 0;
            e->name_at = payload;
            e->name_len = length - 1;
        } else if (code_is(code, "TYPE")) {
            if (seen_type)
                return 0;
            seen_type = 1;
            e->type = length >= 1 ? buf[payload] : -1;
        } else if (code_is(code, "HASH")) {
            slot = &e->hash_at, want = 32;
        } else if (code_is(code, "OFFT")) {
            slot = &e->offt_at, want = 24;
        } else if (code_is(code, "VERS")) {
            slot = &e->vers_at, want = 8;
        } else if (code_is(code, "MDSZ")) {
            slot = &e->mdsz_at, want = 8;
        } else if (code_is(code, "RFLT")) {
            slot = &e->rflt_at, want = 8;
        } else {
            for (int k = 0; k < unknown_count; k++) {
                if (memcmp(unknown[k], code, 4) == 0)
                    return 0;
            }
            if (unknown_count == MAX_UNKNOWN)
                return 0;
            unknown[unknown_count++] = code;
        }
        if (slot != NULL) {
            if (*slot >= 0 || length != want)
                return 0;
            *slot = payload;
        }
        pos = payload + length;
    }
}

/* Per-entry values the span checks need, one array per field, kept while walking. */
typedef struct {
    uint64_t *pub, *priv, *mod, *mdsz, *rflt;
    unsigned char *has_mdsz, *has_rflt;
} Offsets;

static uint64_t entry_u64(const unsigned char *buf, Py_ssize_t at) { return at < 0 ? 0 : u64_at(buf + at); }

/* Chunk i runs from its offset to the next function's (the section end for the last); 0 when
 * the pieces are out of order or leave the section. */
static int piece_sizes(const uint64_t *starts, Py_ssize_t count, const Section *s, uint64_t *sizes)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t start = starts[i];
        uint64_t stop = i + 1 < count ? starts[i + 1] : s->size;
        if (start > stop || stop > s->size)
            return 0;
        sizes[i] = stop - start;
    }
    return 1;
}

/* Module i is MDSZ bytes (older writers: up to the next module); modules in order, inside the
 * bitcode section, not overlapping. */
static int module_sizes(const Offsets *o, Py_ssize_t count, const Section *bitcode, uint64_t *sizes)
{
    uint64_t module_end = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t off = o->mod[i], size;
        if (o->has_mdsz[i]) {
            size = o->mdsz[i];
        } else {
            uint64_t next = i + 1 < count ? o->mod[i + 1] : bitcode->size;
            if (next < off)
                return 0;
            size = next - off;
        }
        if (off > bitcode->size || size > bitcode->size - off || off < module_end)
            return 0;
        module_end = off + size;
        sizes[i] = size;
    }
    return 1;
}

/* Reflection piece i runs from its RFLT to the next present RFLT (the list end for the last):
 * the first after the list's u32 count, each at least 16 bytes. 0 when not so. */
static int reflection_sizes(const Offsets *o, Py_ssize_t count, const Section *rlst, uint64_t *sizes)
{
    Py_ssize_t previous = -1;
    for (Py_ssize_t i = 0; i <= count; i++) {
        if (i < count && !o->has_rflt[i]) {
            sizes[i] = 0;
            continue;
        }
        uint64_t here = i < count ? o->rflt[i] : rlst->size;
        if (previous < 0) {
            if (i < count && here < 4)
                return 0;
        } else {
            uint64_t start = o->rflt[previous];
            if (here < start || here - start < 16 || here > rlst->size)
                return 0;
            sizes[previous] = here - start;
        }
        if (i < count)
            previous = i;
    }
    return 1;
}

/* Fill every column; 1 done, -1 declined (a name is not valid UTF-8), 0 with an exception set
 * when Python runs out of memory. spans[k] and sections[k] are those of piece k + 1 (public
 * metadata to reflection). */
static int fill_columns(PyObject **cols, const unsigned char *buf, Py_ssize_t base, Py_ssize_t count,
                        const Entry *entries, const Py_ssize_t *positions, const Py_ssize_t *sizes,
                        const Offsets *o, uint64_t *const spans[4], const Section sections[4])
{
    PyObject *last_version = NULL;
    char *hashes = PyBytes_AS_STRING(cols[COL_HASHES]);
    uint64_t *offsets[PIECES];
    for (int piece = 0; piece < PIECES; piece++)
        offsets[piece] = (uint64_t *)PyBytes_AS_STRING(cols[COL_OFFSETS(piece)]);
    for (Py_ssize_t i = 0; i < count; i++) {
        const Entry *e = &entries[i];
        memcpy(hashes + 32 * i, buf + e->hash_at, 32);
        offsets[PIECE_ENTRY][i] = (uint64_t)(base + positions[i]);
        const uint64_t relative[3] = {o->pub[i], o->priv[i], o->mod[i]};
        for (int piece = PIECE_PUBLIC_MD; piece <= PIECE_MODULE; piece++)
            offsets[piece][i] = sections[piece - 1].offset + relative[piece - 1];
        offsets[PIECE_REFLECTION][i] = o->has_rflt[i] ? sections[PIECE_REFLECTION - 1].offset + o->rflt[i] : ABSENT;

        PyObject *v[COLUMNS] = {NULL};
        v[COL_NAMES] = PyUnicode_DecodeUTF8((const char *)buf + e->name_at, e->name_len, NULL);
        if (v[COL_NAMES] == NULL) {
            int declined = PyErr_ExceptionMatches(PyExc_UnicodeDecodeError);
            if (declined)
                PyErr_Clear();
            Py_XDECREF(last_version);
            return declined ? -1 : 0;
        }
        v[COL_TYPES] = e->type >= 0 ? PyLong_FromLong(e->type) : Py_NewRef(Py_None);
        if (e->vers_at < 0) {
            v[COL_VERSIONS] = Py_NewRef(Py_None);
        } else {
            /* every function usually has the same version: share one tuple */
            const unsigned char *p = buf + e->vers_at;
            if (last_version == NULL || i == 0 || entries[i - 1].vers_at < 0 ||
                memcmp(buf + entries[i - 1].vers_at, p, 8) != 0) {
                Py_XDECREF(last_version);
                last_version = Py_BuildValue("(HHHH)", u16_at(p), u16_at(p + 2), u16_at(p + 4), u16_at(p + 6));
            }
            v[COL_VERSIONS] = Py_XNewRef(last_version);
        }
        v[COL_OFFT_REL] = PyLong_FromSsize_t(e->offt_at - positions[i]);
        v[COL_RFLT_REL] = e->rflt_at >= 0 ? PyLong_FromSsize_t(e->rflt_at - positions[i]) : Py_NewRef(Py_None);
        v[COL_BYTES(PIECE_ENTRY)] = PyLong_FromSsize_t(sizes[i]);
        for (int piece = PIECE_PUBLIC_MD; piece < PIECES; piece++)
            v[COL_BYTES(piece)] = PyLong_FromUnsignedLongLong(spans[piece - 1][i]);
        int ok = 1;
        for (int c = 0; c < COLUMNS; c++) {
            if (packed(c))
                continue;
            if (v[c] == NULL)
                ok = 0;
            else
                PyList_SET_ITEM(cols[c], i, v[c]); /* steals the reference */
        }
        if (!ok) {
            Py_XDECREF(last_version);
            return 0;
        }
    }
    Py_XDECREF(last_version);
    return 1;
}

static int parse_section(PyObject *obj, Section *s)
{
    unsigned long long offset, size;
    if (!PyArg_ParseTuple(obj, "KK", &offset, &size))
        return 0;
    s->offset = offset;
    s->size = size;
    return 1;
}

PyObject *parse_function_list(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t base, count;
    PyObject *section_args[4];
    (void)module;
    if (!PyArg_ParseTuple(args, "y*nnOOOO:parse_function_list", &view, &base, &count, &section_args[0],
                          &section_args[1], &section_args[2], &section_args[3]))
        return NULL;
    const unsigned char *buf = view.buf;
    Py_ssize_t limit = view.len;
    PyObject *result = NULL;
    PyObject *cols[COLUMNS] = {NULL};
    Entry *entries = NULL;
    Offsets o = {NULL};
    Py_ssize_t *positions = NULL, *sizes = NULL;
    uint64_t *words = NULL; /* pub, priv, mod, mdsz, rflt and the four span sizes */
    unsigned char *flags = NULL; /* has_mdsz, has_rflt */
    uint64_t *spans[4] = {NULL};
    Section sections[4] = {{0, 0}};
    int has_rlst = section_args[3] != Py_None;
    for (int k = 0; k < 4; k++) {
        if ((k < 3 || has_rlst) && !parse_section(section_args[k], &sections[k]))
            goto done;
    }
    /* every entry needs at least 8 bytes, so a count that cannot fit allocates nothing */
    if (count < 0 || count > (limit - 4) / 8)
        goto fallback;
    Py_ssize_t n = count > 0 ? count : 1;
    entries = PyMem_Malloc(n * sizeof *entries);
    positions = PyMem_Malloc(n * sizeof *positions);
    sizes = PyMem_Malloc(n * sizeof *sizes);
    words = PyMem_Calloc(9 * n, sizeof *words);
    flags = PyMem_Calloc(2 * n, 1);
    if (!entries || !positions || !sizes || !words || !flags) {
        PyErr_NoMemory();
        goto done;
    }
    o = (Offsets){words, words + n, words + 2 * n, words + 3 * n, words + 4 * n, flags, flags + n};
    for (int k = 0; k < 4; k++)
        spans[k] = words + (5 + k) * n;
    Py_ssize_t pos = 4;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pos + 4 > limit)
            goto fallback;
        Py_ssize_t size = u32_at(buf + pos);
        if (size < 8 || size > limit - pos)
            goto fallback;
        Entry *e = &entries[i];
        if (!walk_entry(buf, pos, pos + size, e))
            goto fallback;
        const unsigned char *offt = buf + e->offt_at;
        o.pub[i] = u64_at(offt);
        o.priv[i] = u64_at(offt + 8);
        o.mod[i] = u64_at(offt + 16);
        o.mdsz[i] = entry_u64(buf, e->mdsz_at);
        o.rflt[i] = entry_u64(buf, e->rflt_at);
        o.has_mdsz[i] = e->mdsz_at >= 0;
        o.has_rflt[i] = e->rflt_at >= 0;
        if (o.has_rflt[i] && !has_rlst)
            goto fallback;
        positions[i] = pos;
        sizes[i] = size;
        pos += size;
    }
    if (pos != limit)
        goto fallback;
    /* without an RLST no entry has RFLT (checked above) and the reflection sizes stay 0 */
    if (!piece_sizes(o.pub, count, &sections[0], spans[0]) || !piece_sizes(o.priv, count, &sections[1], spans[1]) ||
        !module_sizes(&o, count, &sections[2], spans[2]) ||
        (has_rlst && !reflection_sizes(&o, count, &sections[3], spans[3])))
        goto fallback;
    for (int c = 0; c < COLUMNS; c++) {
        if (c == COL_HASHES)
            cols[c] = PyBytes_FromStringAndSize(NULL, 32 * count);
        else if (packed(c))
            cols[c] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(uint64_t) * count);
        else
            cols[c] = PyList_New(count);
        if (cols[c] == NULL)
            goto done;
    }
    int filled = fill_columns(cols, buf, base, count, entries, positions, sizes, &o, spans, sections);
    if (filled < 0)
        goto fallback;
    if (filled == 0)
        goto done;
    result = PyTuple_New(COLUMNS);
    if (result != NULL) {
        for (int c = 0; c < COLUMNS; c++) {
            PyTuple_SET_ITEM(result, c, cols[c]);
            cols[c] = NULL;
        }
    }
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    for (int c = 0; c < COLUMNS; c++)
        Py_XDECREF(cols[c]); /* unfilled list slots are NULL, which list dealloc skips */
    PyMem_Free(entries);
    PyMem_Free(positions);
    PyMem_Free(sizes);
    PyMem_Free(words);
    PyMem_Free(flags);
    PyBuffer_Release(&view);
    return result;
}

