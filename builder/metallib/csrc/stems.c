/* generic_stems: the generic group of every name (the C form of generic_groups in
 * builder/size/grouping.py, which is the reference and the path without this extension).
 *
 * generic_stems(names, spellings, word_only) -> list of str, or None
 *
 * For each name: dtype spellings found left to right, at each position the longest one that
 * starts there, each replaced by "_" (a spelling in word_only stays when it is not between "_"
 * or the name's ends); then the name is cut at "_", the empty and numeric tokens are dropped
 * (digits, 1 to 6 letters and digits, "true", "false", each with at most one newline after it)
 * and the rest joined by "_"; a name left with nothing is its own stem. Only ASCII names are
 * decided here: None when a name or spelling is not ASCII (Python's \d also takes other
 * digits) or a spelling is shorter than two characters, and Python does the work.
 */
#include "native.h"

typedef struct {
    const char *text;
    Py_ssize_t size;
    int word_only;
    int next; /* the next spelling with the same first two characters, or -1 */
} spelling_t;

/* Spellings by their first two characters (every spelling has two or more): most positions of a
 * name start none, and the rest only a few, each then compared in full. */
#define PAIR(a, b) (((unsigned)(unsigned char)(a) << 7) | (unsigned char)(b))
#define PAIRS (128 * 128)

static int is_numeric(const char *word, Py_ssize_t size)
{
    if (size > 0 && word[size - 1] == '\n')
        size--;
    if ((size == 4 && memcmp(word, "true", 4) == 0) || (size == 5 && memcmp(word, "false", 5) == 0))
        return 1;
    Py_ssize_t letters = 0;
    while (letters < size && ((word[letters] | 0x20) >= 'a' && (word[letters] | 0x20) <= 'z'))
        letters++;
    if (letters > 6 || letters == size)
        return 0;
    for (Py_ssize_t i = letters; i < size; i++)
        if (word[i] < '0' || word[i] > '9')
            return 0;
    return 1;
}

/* The stem of name (size bytes) into out, its size returned; strip has room for size bytes. */
static Py_ssize_t stem(const char *name, Py_ssize_t size, const spelling_t *spellings,
                       const int *first, char *strip, char *out)
{
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < size;) {
        const spelling_t *best = NULL;
        int k = i + 1 < size ? first[PAIR(name[i], name[i + 1])] : -1;
        for (; k >= 0; k = spellings[k].next) {
            const spelling_t *s = &spellings[k];
            if (s->size <= size - i && (best == NULL || s->size > best->size) &&
                memcmp(name + i, s->text, (size_t)s->size) == 0)
                best = s;
        }
        if (best == NULL) {
            strip[kept++] = name[i++];
            continue;
        }
        Py_ssize_t end = i + best->size;
        if (best->word_only && !((i == 0 || name[i - 1] == '_') && (end == size || name[end] == '_'))) {
            memcpy(strip + kept, name + i, (size_t)best->size); /* a short word inside a longer one */
            kept += best->size;
        } else {
            strip[kept++] = '_';
        }
        i = end;
    }
    Py_ssize_t made = 0;
    for (Py_ssize_t start = 0; start < kept;) {
        const char *cut = memchr(strip + start, '_', (size_t)(kept - start));
        Py_ssize_t end = cut == NULL ? kept : cut - strip;
        if (end > start && !is_numeric(strip + start, end - start)) {
            if (made > 0)
                out[made++] = '_';
            memcpy(out + made, strip + start, (size_t)(end - start));
            made += end - start;
        }
        start = end + 1;
    }
    return made;
}

PyObject *generic_stems(PyObject *module, PyObject *args)
{
    PyObject *names_in, *spellings_in, *word_only;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOO:generic_stems", &names_in, &spellings_in, &word_only))
        return NULL;
    PyObject *names = PySequence_Fast(names_in, "generic_stems: names must be a sequence");
    PyObject *given = PySequence_Fast(spellings_in, "generic_stems: spellings must be a sequence");
    PyObject *result = NULL;
    spelling_t *spellings = NULL;
    int *first = NULL;
    char *strip = NULL;
    if (names == NULL || given == NULL)
        goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(given);
    spellings = PyMem_Calloc((size_t)count + 1, sizeof(spelling_t));
    first = PyMem_Malloc(PAIRS * sizeof(int));
    if (spellings == NULL || first == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int pair = 0; pair < PAIRS; pair++)
        first[pair] = -1;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *text = PySequence_Fast_GET_ITEM(given, k);
        if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text) || PyUnicode_GET_LENGTH(text) < 2)
            goto decline;
        int word = PySequence_Contains(word_only, text);
        if (word < 0)
            goto done;
        spelling_t *s = &spellings[k];
        s->text = (const char *)PyUnicode_1BYTE_DATA(text);
        s->size = PyUnicode_GET_LENGTH(text);
        s->word_only = word;
        s->next = first[PAIR(s->text[0], s->text[1])];
        first[PAIR(s->text[0], s->text[1])] = (int)k;
    }
    Py_ssize_t total = PySequence_Fast_GET_SIZE(names), longest = 0;
    PyObject **items = PySequence_Fast_ITEMS(names);
    for (Py_ssize_t n = 0; n < total; n++) {
        if (!PyUnicode_Check(items[n]) || !PyUnicode_IS_ASCII(items[n]))
            goto decline;
        if (PyUnicode_GET_LENGTH(items[n]) > longest)
            longest = PyUnicode_GET_LENGTH(items[n]);
    }
    strip = PyMem_Malloc(2 * (size_t)longest + 1); /* the stripped name, then its stem */
    result = PyList_New(total);
    if (strip == NULL || result == NULL) {
        if (strip == NULL)
            PyErr_NoMemory();
        Py_CLEAR(result);
        goto done;
    }
    for (Py_ssize_t n = 0; n < total; n++) {
        PyObject *name = items[n];
        const char *text = (const char *)PyUnicode_1BYTE_DATA(name);
        Py_ssize_t size = PyUnicode_GET_LENGTH(name);
        char *out = strip + longest;
        Py_ssize_t made = stem(text, size, spellings, first, strip, out);
        PyObject *label;
        if (made == 0 || (made == size && memcmp(out, text, (size_t)size) == 0)) {
            Py_INCREF(name); /* nothing left, or nothing stripped: the name itself */
            label = name;
        } else {
            label = PyUnicode_FromStringAndSize(out, made);
            if (label == NULL) {
                Py_CLEAR(result);
                goto done;
            }
        }
        PyList_SET_ITEM(result, n, label);
    }
    goto done;
decline:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(strip);
    PyMem_Free(spellings);
    PyMem_Free(first);
    Py_XDECREF(names);
    Py_XDECREF(given);
    return result;
}
