/* verify's quick structural screen (the C form of _suspects in builder/metallib/verify.py; it
 * passes more well-formed shapes than the Python loop, never a function the detailed checks fail).
 *
 * screen_functions(buffer, public offsets, public sizes, private offsets, private sizes, module
 * offsets, module sizes, reflection offsets, reflection sizes) -> list of suspect indices: the
 * offsets and sizes of each piece after the entry, in Piece order (pieces.h).
 *
 * A function passes when its module starts with a bitcode wrapper whose bitcode fits the module,
 * both metadata pieces are tag lists that end with ENDT exactly at the piece's end (as
 * _check_piece requires), and its reflection piece, if any, is canonical: u32 size equal to the piece, RBUF, u32 payload with 16 + payload = size, zero
 * padding up to a 16-aligned FlatBuffer, ENDT at the end. Everything else is a suspect, including
 * anything that would read outside the buffer; verify then runs the detailed checks on it.
 */
#include "native.h"

#define WRAPPER_MAGIC 0x0B17C0DEu

/* Field k of a function: the offset (even k) or size (odd k) of piece k / 2 + 1. */
#define OFFSET_OF(piece) (2 * ((piece) - PIECE_PUBLIC_MD))
#define SIZE_OF(piece) (OFFSET_OF(piece) + 1)
#define FIELDS (2 * (PIECES - PIECE_PUBLIC_MD))

static const unsigned char zeros[16] = {0};

/* A list item as u64; None (an absent reflection piece) reads as UINT64_MAX. -1 on error. */
static int item_u64(PyObject *list, Py_ssize_t i, uint64_t *out)
{
    PyObject *item = PyList_GET_ITEM(list, i);
    if (item == Py_None) {
        *out = UINT64_MAX;
        return 0;
    }
    *out = PyLong_AsUnsignedLongLong(item);
    return (*out == (uint64_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

static int fits(uint64_t at, uint64_t n, uint64_t limit) { return at <= limit && n <= limit - at; }

/* A metadata piece: u32, then tags up to an ENDT that ends exactly at the piece's end. */
static int piece_ok(const unsigned char *buf, uint64_t limit, uint64_t at, uint64_t size)
{
    if (size < 8 || !fits(at, size, limit))
        return 0;
    uint64_t pos = at + 4, end = at + size;
    for (;;) {
        if (end - pos < 4)
            return 0;
        if (code_is(buf + pos, "ENDT"))
            return pos + 4 == end;
        int wide = code_is(buf + pos, "RBUF") || code_is(buf + pos, "SARC") || code_is(buf + pos, "SBUF");
        uint64_t head = wide ? 8 : 6;
        if (end - pos < head)
            return 0;
        uint64_t length = wide ? u32_at(buf + pos + 4) : u16_at(buf + pos + 4);
        if (length > end - pos - head)
            return 0;
        pos += head + length;
    }
}

static int function_passes(const unsigned char *buf, uint64_t limit, const uint64_t *f)
{
    uint64_t mod = f[OFFSET_OF(PIECE_MODULE)], mod_n = f[SIZE_OF(PIECE_MODULE)];
    if (mod_n < 20 || !fits(mod, mod_n, limit))
        return 0;
    /* u32 wrapper fields: magic, version, bitcode offset, bitcode size, cpu type */
    if (u32_at(buf + mod) != WRAPPER_MAGIC ||
        (uint64_t)u32_at(buf + mod + 8) + u32_at(buf + mod + 12) > mod_n)
        return 0;
    if (!piece_ok(buf, limit, f[OFFSET_OF(PIECE_PUBLIC_MD)], f[SIZE_OF(PIECE_PUBLIC_MD)]) ||
        !piece_ok(buf, limit, f[OFFSET_OF(PIECE_PRIVATE_MD)], f[SIZE_OF(PIECE_PRIVATE_MD)]))
        return 0;
    uint64_t refl = f[OFFSET_OF(PIECE_REFLECTION)], refl_n = f[SIZE_OF(PIECE_REFLECTION)];
    if (refl == UINT64_MAX)
        return 1;
    if (refl_n < 16 || !fits(refl, refl_n, limit))
        return 0;
    const unsigned char *piece = buf + refl;
    uint64_t payload = u32_at(piece + 8);
    uint64_t pad = (16 - (refl + 12) % 16) % 16;
    return u32_at(piece) == refl_n && code_is(piece + 4, "RBUF") && payload + 16 == refl_n && pad <= payload &&
           code_is(piece + 12 + payload, "ENDT") && memcmp(piece + 12, zeros, pad) == 0;
}

PyObject *screen_functions(PyObject *module, PyObject *args)
{
    Py_buffer view;
    PyObject *lists[FIELDS];
    (void)module;
    if (!PyArg_ParseTuple(args, "y*O!O!O!O!O!O!O!O!:screen_functions", &view, &PyList_Type, &lists[0],
                          &PyList_Type, &lists[1], &PyList_Type, &lists[2], &PyList_Type, &lists[3],
                          &PyList_Type, &lists[4], &PyList_Type, &lists[5], &PyList_Type, &lists[6],
                          &PyList_Type, &lists[7]))
        return NULL;
    PyObject *suspects = NULL;
    Py_ssize_t count = PyList_GET_SIZE(lists[0]);
    for (int k = 1; k < FIELDS; k++) {
        if (PyList_GET_SIZE(lists[k]) != count) {
            PyErr_SetString(PyExc_ValueError, "screen_functions: the columns differ in length");
            goto done;
        }
    }
    suspects = PyList_New(0);
    if (suspects == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t f[FIELDS];
        for (int k = 0; k < FIELDS; k++) {
            if (item_u64(lists[k], i, &f[k]) < 0) {
                Py_CLEAR(suspects);
                goto done;
            }
        }
        if (!function_passes(view.buf, (uint64_t)view.len, f)) {
            PyObject *index = PyLong_FromSsize_t(i);
            int failed = index == NULL || PyList_Append(suspects, index) < 0;
            Py_XDECREF(index);
            if (failed) {
                Py_CLEAR(suspects);
                goto done;
            }
        }
    }
done:
    PyBuffer_Release(&view);
    return suspects;
}
