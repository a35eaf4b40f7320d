/* reflection_pieces: what a rewrite needs to know about each reflection piece (the C form of
 * _reflection_payloads in builder/metallib/table.py, which documents the rules).
 *
 * reflection_pieces(buffer, offsets, piece sizes) -> (FlatBuffer sizes, canonical flags). An
 * offset of None (no piece) gives None and True. Offsets and sizes come from a checked parse;
 * a piece that would be read outside the buffer raises ValueError.
 */
#include "native.h"

PyObject *reflection_pieces(PyObject *module, PyObject *args)
{
    Py_buffer view;
    PyObject *offsets, *piece_sizes;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*O!O!:reflection_pieces", &view, &PyList_Type, &offsets, &PyList_Type,
                          &piece_sizes))
        return NULL;
    PyObject *sizes = NULL, *canonical = NULL, *result = NULL;
    Py_ssize_t count = PyList_GET_SIZE(offsets);
    if (PyList_GET_SIZE(piece_sizes) != count) {
        PyErr_SetString(PyExc_ValueError, "reflection_pieces: the columns differ in length");
        goto done;
    }
    sizes = PyList_New(count);
    canonical = PyList_New(count);
    if (sizes == NULL || canonical == NULL)
        goto done;
    const unsigned char *buf = view.buf;
    uint64_t limit = (uint64_t)view.len;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(offsets, i);
        if (item == Py_None) {
            PyList_SET_ITEM(sizes, i, Py_NewRef(Py_None));
            PyList_SET_ITEM(canonical, i, Py_NewRef(Py_True));
            continue;
        }
        uint64_t at = PyLong_AsUnsignedLongLong(item);
        uint64_t size = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(piece_sizes, i));
        if (PyErr_Occurred())
            goto done;
        if (size < 16 || at > limit || limit - at < 12) {
            PyErr_Format(PyExc_ValueError, "reflection_pieces: piece %zd at %llu is outside the buffer", i,
                         (unsigned long long)at);
            goto done;
        }
        uint64_t declared = u32_at(buf + at), payload = u32_at(buf + at + 8);
        uint64_t pad = (16 - (at + 12) % 16) % 16;
        uint64_t usable = payload < size - 16 ? payload : size - 16;
        uint64_t flatbuffer = usable > pad ? usable - pad : 0;
        PyObject *n = PyLong_FromUnsignedLongLong(flatbuffer);
        if (n == NULL)
            goto done;
        PyList_SET_ITEM(sizes, i, n);
        PyList_SET_ITEM(canonical, i, PyBool_FromLong(declared == 16 + pad + flatbuffer));
    }
    result = PyTuple_Pack(2, sizes, canonical);
done:
    Py_XDECREF(sizes); /* unfilled slots are NULL, which list dealloc skips */
    Py_XDECREF(canonical);
    PyBuffer_Release(&view);
    return result;
}
