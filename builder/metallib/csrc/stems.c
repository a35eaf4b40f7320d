/* generic_stems: the generic op or stem of every name (the C form of _labels in
 * builder/size/naming.py, which is the reference and the path without this extension).
 *
 * generic_stems(names, spellings, word_only, layouts, level) -> list of str, or None
 *
 * For each name: dtype spellings found left to right, at each position the longest one that
 * starts there (a spelling in word_only only when it stands between "_" or the name's ends, else
 * its text stays, the scan going on after it); "_" and each dtype cut the name into words, empty
 * ones dropped.
 * (A word-only spelling also counts right after the letters "mask" when it ends a token:
 * maskhalf.) A mask word with its type (mask_at) is a word ending in "mask", not "nomask", glued
 * to a dtype, or longer than "mask" and followed by a dtype or "nomask".
 * The head is the words before the first dtype, number ([0-9]+, optionally "bit"/"bits") or mask
 * word with its type; with none, the words before the trailing parameters, never fewer than the
 * first word. After the head, parameters go (a mask word and its type, numbers, 1 to 6 letters
 * then digits, "true", "false", "taligned", "naligned", a 1-to-6-letter key followed by a [0-9]+
 * word or one of those flags) and other words stay: the head and those are the stem (level 1).
 * The op (level 0) is the head's words up to the first layout word (one of layouts, trailing
 * digits aside), leading layout words skipped. An empty op is the stem, an empty stem the name. Only ASCII names are decided here: None when a name, spelling or layout word is not
 * ASCII or a spelling is shorter than two characters, and Python does the work.
 */
#include "native.h"

typedef struct {
    const char *text;
    Py_ssize_t size;
    int word_only;
    int next; /* the next spelling with the same first two characters, or -1 */
} spelling_t;

typedef struct {
    const char *text;
    Py_ssize_t size; /* -1: a dtype */
    int glued;       /* a dtype glued to the word before it (copyfloat16, maskbool_) */
} word_t;

/* Spellings by their first two characters (every spelling has two or more): most positions of a
 * name start none, and the rest only a few, each then compared in full. */
#define PAIR(a, b) (((unsigned)(unsigned char)(a) << 7) | (unsigned char)(b))
#define PAIRS (128 * 128)

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_letter(char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

static int is_word(const word_t *w, const char *text) /* w is exactly text */
{
    return w->size == (Py_ssize_t)strlen(text) && memcmp(w->text, text, (size_t)w->size) == 0;
}

static int is_flag(const word_t *w) /* true|false|taligned|naligned */
{
    return is_word(w, "true") || is_word(w, "false") || is_word(w, "taligned") || is_word(w, "naligned");
}

static int is_value(const word_t *w) /* [0-9]+ or a flag */
{
    if (w->size <= 0)
        return 0;
    if (is_flag(w))
        return 1;
    for (Py_ssize_t i = 0; i < w->size; i++)
        if (!is_digit(w->text[i]))
            return 0;
    return 1;
}

static int is_number(const word_t *w) /* [0-9]+(bits?)? */
{
    Py_ssize_t digits = 0;
    while (digits < w->size && is_digit(w->text[digits]))
        digits++;
    if (digits == 0)
        return 0;
    Py_ssize_t tail = w->size - digits;
    const char *t = w->text + digits;
    return tail == 0 || (tail == 3 && memcmp(t, "bit", 3) == 0) || (tail == 4 && memcmp(t, "bits", 4) == 0);
}

static int is_key(const word_t *w) /* [A-Za-z]{1,6} */
{
    if (w->size < 1 || w->size > 6)
        return 0;
    for (Py_ssize_t i = 0; i < w->size; i++)
        if (!is_letter(w->text[i]))
            return 0;
    return 1;
}

static int is_parameter(const word_t *w)
{
    if (w->size < 0)
        return 0;
    if (is_number(w) || is_flag(w))
        return 1;
    Py_ssize_t letters = 0;
    while (letters < w->size && is_letter(w->text[letters]))
        letters++;
    if (letters < 1 || letters > 6 || letters == w->size)
        return 0;
    for (Py_ssize_t i = letters; i < w->size; i++)
        if (!is_digit(w->text[i]))
            return 0;
    return 1;
}

static int is_layout(const word_t *w, const word_t *layouts, Py_ssize_t count)
{
    Py_ssize_t size = w->size;
    while (size > 0 && is_digit(w->text[size - 1]))
        size--;
    for (Py_ssize_t k = 0; k < count; k++)
        if (layouts[k].size == size && memcmp(layouts[k].text, w->text, (size_t)size) == 0)
            return 1;
    return 0;
}

/* Whether words[i] is a mask word followed by the mask's type: a word ending in "mask" (not
 * "nomask") glued to a dtype (maskbool_), or longer than "mask" and followed by a dtype or
 * "nomask" (outmask_bool_, opmask_nomask). */
static int mask_at(const word_t *words, Py_ssize_t count, Py_ssize_t i)
{
    if (i + 1 >= count)
        return 0;
    const word_t *w = &words[i], *after = &words[i + 1];
    if (w->size < 4 || memcmp(w->text + w->size - 4, "mask", 4) != 0 || is_word(w, "nomask"))
        return 0;
    if (after->size < 0)
        return after->glued || w->size > 4;
    return w->size > 4 && is_word(after, "nomask");
}

/* The words of name into words (room for size + 1), their count returned. */
static Py_ssize_t split(const char *name, Py_ssize_t size, const spelling_t *spellings, const int *first,
                        word_t *words)
{
    Py_ssize_t count = 0, start = 0;
#define CUT(at)                                                                                    \
    do {                                                                                           \
        if ((at) > start) {                                                                        \
            words[count].text = name + start;                                                      \
            words[count].glued = 0;                                                                \
            words[count++].size = (at)-start;                                                      \
        }                                                                                          \
    } while (0)
    for (Py_ssize_t i = 0; i < size;) {
        if (name[i] == '_') {
            CUT(i);
            start = ++i;
            continue;
        }
        const spelling_t *best = NULL;
        int k = i + 1 < size ? first[PAIR(name[i], name[i + 1])] : -1;
        for (; k >= 0; k = spellings[k].next) {
            const spelling_t *s = &spellings[k];
            if (s->size <= size - i && (best == NULL || s->size > best->size) &&
                memcmp(name + i, s->text, (size_t)s->size) == 0)
                best = s;
        }
        if (best == NULL) {
            i++;
            continue;
        }
        Py_ssize_t end = i + best->size;
        int apart = i == 0 || name[i - 1] == '_';
        int after_mask = i >= 4 && memcmp(name + i - 4, "mask", 4) == 0;
        if (best->word_only && !((apart || after_mask) && (end == size || name[end] == '_'))) {
            for (; i < end; i++) /* a short word inside a longer one: its text stays, "_" cuts */
                if (name[i] == '_') {
                    CUT(i);
                    start = i + 1;
                }
            continue;
        }
        CUT(i);
        words[count].text = NULL;
        words[count].glued = !apart;
        words[count++].size = -1;
        start = i = end;
    }
    CUT(size);
#undef CUT
    return count;
}

static Py_ssize_t append(char *out, Py_ssize_t made, const word_t *w)
{
    if (made > 0)
        out[made++] = '_';
    memcpy(out + made, w->text, (size_t)w->size);
    return made + w->size;
}

/* The label of one name into out (room for size bytes), its size returned (0: the name). */
static Py_ssize_t label(const word_t *words, Py_ssize_t count, const word_t *layouts, Py_ssize_t nlayouts,
                        int level, char *out)
{
    Py_ssize_t end = 0;
    while (end < count && words[end].size >= 0 && !is_number(&words[end]) && !mask_at(words, count, end))
        end++;
    if (end == count) /* no dtype, no number: the head ends before its trailing parameters */
        while (end > 1 && is_parameter(&words[end - 1]))
            end--;
    Py_ssize_t made = 0;
    if (level == 0) {
        for (Py_ssize_t i = 0; i < end; i++) {
            if (is_layout(&words[i], layouts, nlayouts)) {
                if (made > 0)
                    break;
                continue;
            }
            made = append(out, made, &words[i]);
        }
        if (made > 0)
            return made;
    }
    for (Py_ssize_t i = 0; i < end; i++)
        made = append(out, made, &words[i]);
    for (Py_ssize_t i = end; i < count; i++) {
        const word_t *w = &words[i];
        if (mask_at(words, count, i)) {
            i++; /* outmask_bool_: a mask word and its type */
            continue;
        }
        if (w->size < 0 || is_parameter(w))
            continue;
        if (i + 1 < count && is_key(w) && is_value(&words[i + 1])) {
            i++; /* gs_32, MN_taligned: a key and its value */
            continue;
        }
        made = append(out, made, w);
    }
    return made;
}

static int read_words(PyObject *given, word_t *into, Py_ssize_t count, int min_size)
{
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *text = PySequence_Fast_GET_ITEM(given, k);
        if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text) || PyUnicode_GET_LENGTH(text) < min_size)
            return 0;
        into[k].text = (const char *)PyUnicode_1BYTE_DATA(text);
        into[k].size = PyUnicode_GET_LENGTH(text);
    }
    return 1;
}

PyObject *generic_stems(PyObject *module, PyObject *args)
{
    PyObject *names_in, *spellings_in, *word_only, *layouts_in;
    int level;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOi:generic_stems", &names_in, &spellings_in, &word_only, &layouts_in,
                          &level))
        return NULL;
    PyObject *names = PySequence_Fast(names_in, "generic_stems: names must be a sequence");
    PyObject *given = PySequence_Fast(spellings_in, "generic_stems: spellings must be a sequence");
    PyObject *layout_seq = PySequence_Fast(layouts_in, "generic_stems: layouts must be a sequence");
    PyObject *result = NULL;
    spelling_t *spellings = NULL;
    word_t *texts = NULL, *layouts = NULL, *words = NULL;
    int *first = NULL;
    char *out = NULL;
    if (names == NULL || given == NULL || layout_seq == NULL)
        goto done;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(given), nlayouts = PySequence_Fast_GET_SIZE(layout_seq);
    spellings = PyMem_Calloc((size_t)count + 1, sizeof(spelling_t));
    texts = PyMem_Calloc((size_t)count + 1, sizeof(word_t));
    layouts = PyMem_Calloc((size_t)nlayouts + 1, sizeof(word_t));
    first = PyMem_Malloc(PAIRS * sizeof(int));
    if (spellings == NULL || texts == NULL || layouts == NULL || first == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (!read_words(given, texts, count, 2) || !read_words(layout_seq, layouts, nlayouts, 0))
        goto decline;
    for (int pair = 0; pair < PAIRS; pair++)
        first[pair] = -1;
    for (Py_ssize_t k = 0; k < count; k++) {
        int word = PySequence_Contains(word_only, PySequence_Fast_GET_ITEM(given, k));
        if (word < 0)
            goto done;
        spelling_t *s = &spellings[k];
        s->text = texts[k].text;
        s->size = texts[k].size;
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
    words = PyMem_Malloc(((size_t)longest + 1) * sizeof(word_t));
    out = PyMem_Malloc((size_t)longest + 1);
    result = PyList_New(total);
    if (words == NULL || out == NULL || result == NULL) {
        if (result != NULL)
            PyErr_NoMemory();
        Py_CLEAR(result);
        goto done;
    }
    for (Py_ssize_t n = 0; n < total; n++) {
        PyObject *name = items[n];
        const char *text = (const char *)PyUnicode_1BYTE_DATA(name);
        Py_ssize_t size = PyUnicode_GET_LENGTH(name);
        Py_ssize_t nwords = split(text, size, spellings, first, words);
        Py_ssize_t made = label(words, nwords, layouts, nlayouts, level, out);
        PyObject *found;
        if (made == 0 || (made == size && memcmp(out, text, (size_t)size) == 0)) {
            Py_INCREF(name); /* nothing left, or nothing dropped: the name itself */
            found = name;
        } else {
            found = PyUnicode_FromStringAndSize(out, made);
            if (found == NULL) {
                Py_CLEAR(result);
                goto done;
            }
        }
        PyList_SET_ITEM(result, n, found);
    }
    goto done;
decline:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(out);
    PyMem_Free(words);
    PyMem_Free(spellings);
    PyMem_Free(texts);
    PyMem_Free(layouts);
    PyMem_Free(first);
    Py_XDECREF(names);
    Py_XDECREF(given);
    Py_XDECREF(layout_seq);
    return result;
}
