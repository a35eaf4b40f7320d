/* coalesce_runs: merge pieces of the source that lie back to back into runs to copy (the C
 * form of coalesce in builder/metallib/table.py).
 *
 * coalesce_runs(offsets, sizes) -> [(start, length), ...]; a piece that starts where the
 * previous one ends extends it. Empty pieces are skipped.
 */
#include "native.h"

static int append_run(PyObject *runs, uint64_t start, uint64_t end)
{
    PyObject *run = Py_BuildValue("(KK)", (unsigned long long)start, (unsigned long long)(end - start));
    if (run == NULL)
        return -1;
    int status = PyList_Append(runs, run);
    Py_DECREF(run);
    return status;
}

PyObject *coalesce_runs(PyObject *module, PyObject *args)
{
    PyObject *offsets, *sizes;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!:coalesce_runs", &PyList_Type, &offsets, &PyList_Type, &sizes))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(offsets);
    if (PyList_GET_SIZE(sizes) != count) {
        PyErr_SetString(PyExc_ValueError, "coalesce_runs: the columns differ in length");
        return NULL;
    }
    PyObject *runs = PyList_New(0);
    if (runs == NULL)
        return NULL;
    uint64_t start = 0, end = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t offset = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(offsets, i));
        uint64_t size = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(sizes, i));
        if (PyErr_Occurred())
            goto fail;
        if (size == 0)
            continue;
        if (end > start && offset == end) {
            end += size;
            continue;
        }
        if (end > start && append_run(runs, start, end) < 0)
            goto fail;
        start = offset;
        end = offset + size;
    }
    if (end > start && append_run(runs, start, end) < 0)
        goto fail;
    return runs;
fail:
    Py_DECREF(runs);
    return NULL;
}
