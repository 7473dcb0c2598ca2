# Compiled parser for the line-based sparse text formats of XMC data sets.
#
# One row per line: an optional comma-separated label list, then `id:value`
# tokens separated by spaces or tabs. The whole body is parsed in one nogil
# pass into CSR buffers whose sizes come from a first counting pass, so memory
# stays proportional to the number of entries. See _parse.pxd for the row
# model: every scan below is bounded by the end of the current line's content.

from libc.math cimport isfinite
from libc.stdlib cimport strtof
from libc.string cimport memchr

import numpy as np

cimport numpy as cnp

cnp.import_array()

# Limits are enum constants, not module variables, so that the C compiler
# sees them as literals: a variable would be reloaded after every store
# through a pointer, since any store may alias a char buffer.
cdef enum:
    # Ids are stored as int32; anything above this is rejected, not wrapped.
    MAX_ID = 2147483647
    # Decimals without an exponent whose digits form an integer <= 2**24
    # with at most 10 fraction digits are converted with one float32
    # division: both operands are exact in float32 (10**10 = 2**10 * 5**10,
    # 5**10 < 2**24) and IEEE division rounds correctly, so the result
    # equals strtof's. Other numbers (exponents, more digits) go through
    # strtof.
    MAX_EXACT_MANTISSA = 16777216
    MAX_EXACT_FRACTION_DIGITS = 10
cdef float32_t[11] POWERS_OF_TEN = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10]


# A decimal number as scanned by scan_decimal.
cdef struct decimal:
    offset_t mantissa           # all its digits as one integer, saturating above 2**24
    offset_t n_fraction         # digits after the point
    bint negative               # starts with '-'
    bint has_exponent           # has an `e`/`E` part


cdef inline bint is_blank(unsigned char c) noexcept nogil:
    return c == c' ' or c == c'\t'


cdef inline bint ends_token(const unsigned char* buf, offset_t pos, offset_t end) noexcept nogil:
    return pos == end or is_blank(buf[pos])


cdef inline bint is_digit(unsigned char c) noexcept nogil:
    return c'0' <= c <= c'9'


cdef inline offset_t fail(parse_error* error, int code, offset_t offset, offset_t line,
                          offset_t value) noexcept nogil:
    """Record a parse error and return -1, the parser's "stop" position."""
    error.code = code
    error.offset = offset
    error.line = line
    error.value = value
    return -1


cdef inline offset_t find_line_end(const unsigned char* buf, offset_t pos,
                                   offset_t end) noexcept nogil:
    """Return the position of the first '\\n' in buf[pos:end], or -1."""
    cdef const void* found = memchr(buf + pos, c'\n', end - pos)
    return -1 if found == NULL else <offset_t>(<const unsigned char*>found - buf)


cdef inline offset_t text_end(const unsigned char* buf, offset_t line_start,
                              offset_t line_end) noexcept nogil:
    """Where the text of the row ending at `line_end` ends: before a CRLF's CR."""
    if line_end > line_start and buf[line_end - 1] == c'\r':
        return line_end - 1
    return line_end


cdef void blame_control_character(const unsigned char* buf, offset_t pos, offset_t end,
                                  parse_error* error) noexcept nogil:
    """Report the first control byte of buf[pos:end], if any, instead of `error`.

    No token grammar admits a control byte other than a tab, so a row that
    holds one always fails; naming the byte is clearer than naming the token
    it broke. Runs on the error path only, which keeps valid rows to one scan.
    """
    while pos < end:
        if buf[pos] < c' ' and buf[pos] != c'\t':
            error.code = CONTROL_CHARACTER
            error.offset = pos
            error.value = buf[pos]
            return
        pos += 1


cdef inline offset_t scan_id(const unsigned char* buf, offset_t pos, offset_t end,
                             offset_t* id_out) noexcept nogil:
    """Read the decimal digits at `pos`; return the position after them.

    The value saturates just above MAX_ID instead of overflowing, so callers
    can detect ids that do not fit in an index_t.
    """
    cdef offset_t value = 0
    while pos < end and is_digit(buf[pos]):
        if value <= MAX_ID:
            value = value * 10 + (buf[pos] - c'0')
        pos += 1
    id_out[0] = value
    return pos


cdef inline int id_problem(const unsigned char* buf, offset_t start, offset_t id_end,
                           offset_t end, offset_t value, int malformed_code) noexcept nogil:
    """Classify the id scanned from `start` to `id_end`: PARSE_OK or an error code."""
    if id_end == start:
        if end - start >= 2 and buf[start] == c'-' and is_digit(buf[start + 1]):
            return NEGATIVE_ID
        return malformed_code
    if value > MAX_ID:
        return ID_TOO_LARGE
    return PARSE_OK


cdef offset_t parse_labels(const unsigned char* buf, offset_t pos, offset_t end, offset_t line,
                           csr_rows* out, parse_error* error) noexcept nogil:
    """Parse the label list `l1,l2,...` at `pos`; return the position after it."""
    cdef offset_t token_start = pos
    cdef offset_t id_end, label
    cdef int problem
    while True:
        id_end = scan_id(buf, pos, end, &label)
        problem = id_problem(buf, pos, id_end, end, label, BAD_LABEL_LIST)
        if problem != PARSE_OK:
            return fail(error, problem, token_start, line, 0)
        out.label_indices[out.n_label_entries] = <index_t>label
        out.n_label_entries += 1
        pos = id_end
        if ends_token(buf, pos, end):
            return pos
        if buf[pos] != c',':
            return fail(error, BAD_LABEL_LIST, token_start, line, 0)
        pos += 1


cdef inline bint is_qid(const unsigned char* buf, offset_t pos, offset_t end) noexcept nogil:
    return (end - pos >= 4 and buf[pos] == c'q' and buf[pos + 1] == c'i'
            and buf[pos + 2] == c'd' and buf[pos + 3] == c':')


cdef inline offset_t scan_digits(const unsigned char* buf, offset_t pos, offset_t end,
                                 offset_t* mantissa) noexcept nogil:
    """Append the digits at `pos` to `mantissa`; return the position after them."""
    while pos < end and is_digit(buf[pos]):
        # Saturate: past 2**24 the value is only ever compared with the limit.
        if mantissa[0] <= MAX_EXACT_MANTISSA:
            mantissa[0] = mantissa[0] * 10 + (buf[pos] - c'0')
        pos += 1
    return pos


cdef inline offset_t scan_decimal(const unsigned char* buf, offset_t pos, offset_t end,
                                  decimal* number) noexcept nogil:
    """Match `[+-]?(digits[.[digits]] | .digits)([eE][+-]?digits)?` at `pos`.

    Returns the position after the match, or -1 if there is none. Only this
    ASCII grammar is a value, whatever else strtof would accept (hexadecimal,
    a locale's decimal comma); `1_0` or non-ASCII digits never match.
    """
    # Locals, not `number`'s fields, in the loops: writes through a pointer
    # could alias the (char) buffer, which would keep them out of registers.
    cdef offset_t mantissa = 0
    cdef offset_t n_fraction = 0
    cdef bint negative = pos < end and buf[pos] == c'-'
    cdef bint has_exponent = False
    cdef offset_t digits_start, fraction_start, exponent_start
    if pos < end and (buf[pos] == c'-' or buf[pos] == c'+'):
        pos += 1
    digits_start = pos
    pos = scan_digits(buf, pos, end, &mantissa)
    if pos < end and buf[pos] == c'.':
        fraction_start = pos + 1
        pos = scan_digits(buf, fraction_start, end, &mantissa)
        n_fraction = pos - fraction_start
        if pos - digits_start == 1:
            return -1  # a lone '.'
    elif pos == digits_start:
        return -1
    if pos < end and (buf[pos] == c'e' or buf[pos] == c'E'):
        pos += 1
        if pos < end and (buf[pos] == c'-' or buf[pos] == c'+'):
            pos += 1
        exponent_start = pos
        while pos < end and is_digit(buf[pos]):
            pos += 1
        if pos == exponent_start:
            return -1
        has_exponent = True
    number.mantissa = mantissa
    number.n_fraction = n_fraction
    number.negative = negative
    number.has_exponent = has_exponent
    return pos


cdef inline bint is_word(const unsigned char* buf, offset_t pos, offset_t end,
                         const char* word, offset_t length) noexcept nogil:
    """True if buf[pos:end] is `word` (lowercase ASCII) up to case."""
    cdef offset_t i
    if end - pos != length:
        return False
    for i in range(length):
        # OR-ing 0x20 lowercases ASCII letters; `word` holds only letters.
        if buf[pos + i] | 0x20 != <unsigned char>word[i]:
            return False
    return True


cdef bint names_non_finite(const unsigned char* buf, offset_t pos, offset_t end) noexcept nogil:
    """True if the token at `pos` is `nan`, `inf` or `infinity` (signed, any case)."""
    cdef offset_t token_end = pos
    while not ends_token(buf, token_end, end):
        token_end += 1
    if pos < token_end and (buf[pos] == c'-' or buf[pos] == c'+'):
        pos += 1
    return (is_word(buf, pos, token_end, "nan", 3) or is_word(buf, pos, token_end, "inf", 3)
            or is_word(buf, pos, token_end, "infinity", 8))


cdef offset_t parse_value(const unsigned char* buf, offset_t pos, offset_t end,
                          offset_t token_start, offset_t line, float32_t* value_out,
                          parse_error* error) noexcept nogil:
    """Parse the number at `pos` (after `id:`); return the position after it."""
    cdef decimal number
    cdef offset_t number_end = scan_decimal(buf, pos, end, &number)
    cdef char* strtof_end
    cdef float32_t value
    if number_end < 0 or not ends_token(buf, number_end, end):
        if ends_token(buf, pos, end):
            return fail(error, BAD_FEATURE_TOKEN, token_start, line, 0)
        if names_non_finite(buf, pos, end):
            return fail(error, NON_FINITE_VALUE, token_start, line, 0)
        return fail(error, BAD_VALUE, token_start, line, 0)
    if (not number.has_exponent and number.mantissa <= MAX_EXACT_MANTISSA
            and number.n_fraction <= MAX_EXACT_FRACTION_DIGITS):
        value = <float32_t>number.mantissa / POWERS_OF_TEN[number.n_fraction]
        value_out[0] = -value if number.negative else value
        return number_end
    # The match is followed by a blank, the CR or the '\n' ending the line,
    # which end any number, so strtof converts exactly the matched text; a
    # different end means strtof reads numbers otherwise (LC_NUMERIC locale).
    value = strtof(<const char*>(buf + pos), &strtof_end)
    if <const unsigned char*>strtof_end != buf + number_end:
        return fail(error, BAD_VALUE, token_start, line, 0)
    if not isfinite(value):
        return fail(error, NON_FINITE_VALUE, token_start, line, 0)
    value_out[0] = value
    return number_end


cdef offset_t parse_feature(const unsigned char* buf, offset_t pos, offset_t end, offset_t line,
                            csr_rows* out, parse_error* error) noexcept nogil:
    """Parse one `id:value` token at `pos`; return the position after it."""
    cdef offset_t token_start = pos
    cdef offset_t feature
    cdef offset_t id_end = scan_id(buf, pos, end, &feature)
    cdef int problem = id_problem(buf, pos, id_end, end, feature, BAD_FEATURE_TOKEN)
    if problem == PARSE_OK and (id_end == end or buf[id_end] != c':'):
        problem = BAD_FEATURE_TOKEN
    if problem == BAD_FEATURE_TOKEN and is_qid(buf, pos, end):
        problem = QID_TOKEN
    if problem != PARSE_OK:
        return fail(error, problem, token_start, line, 0)
    pos = parse_value(buf, id_end + 1, end, token_start, line,
                      &out.feature_values[out.n_feature_entries], error)
    if pos >= 0:
        out.feature_indices[out.n_feature_entries] = <index_t>feature
        out.n_feature_entries += 1
    return pos


cdef inline void swap_entries(index_t* ids, float32_t* values, offset_t a,
                              offset_t b) noexcept nogil:
    cdef index_t id_a = ids[a]
    cdef float32_t value_a
    ids[a] = ids[b]
    ids[b] = id_a
    if values != NULL:
        value_a = values[a]
        values[a] = values[b]
        values[b] = value_a


cdef void sift_down(index_t* ids, float32_t* values, offset_t root, offset_t n) noexcept nogil:
    """Restore the max-heap property below `root` in ids[0:n]."""
    cdef offset_t child
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and ids[child + 1] > ids[child]:
            child += 1
        if ids[root] >= ids[child]:
            return
        swap_entries(ids, values, root, child)
        root = child


cdef void sort_ids(index_t* ids, float32_t* values, offset_t n) noexcept nogil:
    """Sort ids[0:n] ascending, moving values (if not NULL) along with them.

    Heapsort: in place and O(n log n) even for adversarial rows; rows are
    sorted in almost every real file, so this runs rarely.
    """
    cdef offset_t i
    for i in range(n // 2 - 1, -1, -1):
        sift_down(ids, values, i, n)
    for i in range(n - 1, 0, -1):
        swap_entries(ids, values, 0, i)
        sift_down(ids, values, 0, i)


cdef offset_t find_duplicate(index_t* ids, float32_t* values, offset_t n) noexcept nogil:
    """Sort ids[0:n] if needed; return an id that occurs twice, or -1."""
    cdef offset_t i
    for i in range(1, n):
        if ids[i] <= ids[i - 1]:
            sort_ids(ids, values, n)
            break
    for i in range(1, n):
        if ids[i] == ids[i - 1]:
            return ids[i]
    return -1


cdef offset_t drop_zeros(index_t* ids, float32_t* values, offset_t n) noexcept nogil:
    """Remove entries whose value is zero; return the new length."""
    cdef offset_t i
    cdef offset_t kept = 0
    for i in range(n):
        if values[i] != 0:
            ids[kept] = ids[i]
            values[kept] = values[i]
            kept += 1
    return kept


cdef int finish_row(csr_rows* out, offset_t feature_start, offset_t label_start,
                    offset_t line_start, offset_t line, parse_error* error) noexcept nogil:
    """Canonicalise the row just parsed (sort, reject duplicates, drop zeros)."""
    cdef index_t* ids = out.feature_indices + feature_start
    cdef float32_t* values = out.feature_values + feature_start
    cdef offset_t n = out.n_feature_entries - feature_start
    cdef offset_t duplicate = find_duplicate(ids, values, n)
    if duplicate >= 0:
        fail(error, DUPLICATE_FEATURE, line_start, line, duplicate)
        return -1
    out.n_feature_entries = feature_start + drop_zeros(ids, values, n)
    duplicate = find_duplicate(out.label_indices + label_start, NULL,
                               out.n_label_entries - label_start)
    if duplicate >= 0:
        fail(error, DUPLICATE_LABEL, line_start, line, duplicate)
        return -1
    out.n_rows += 1
    out.feature_indptr[out.n_rows] = out.n_feature_entries
    out.label_indptr[out.n_rows] = out.n_label_entries
    return 0


cdef inline bint first_token_is_feature(const unsigned char* buf, offset_t pos,
                                        offset_t end) noexcept nogil:
    """True if the token at `pos` contains ':' (a feature, not a label list)."""
    while not ends_token(buf, pos, end):
        if buf[pos] == c':':
            return True
        pos += 1
    return False


cdef int parse_line(const unsigned char* buf, offset_t pos, offset_t end, bint labels_first,
                    offset_t line, csr_rows* out, parse_error* error) noexcept nogil:
    """Parse the row whose text is buf[pos:end] (no line end in it); 0, or -1 on error."""
    cdef offset_t line_start = pos
    cdef offset_t feature_start = out.n_feature_entries
    cdef offset_t label_start = out.n_label_entries
    # A line that starts with a blank, or whose first token is `id:value`,
    # has no labels.
    if (labels_first and not ends_token(buf, pos, end)
            and not first_token_is_feature(buf, pos, end)):
        pos = parse_labels(buf, pos, end, line, out, error)
        if pos < 0:
            return -1
    while True:
        while pos < end and is_blank(buf[pos]):
            pos += 1
        if pos == end:
            break
        pos = parse_feature(buf, pos, end, line, out, error)
        if pos < 0:
            return -1
    return finish_row(out, feature_start, label_start, line_start, line, error)


cdef offset_t parse_rows(const unsigned char* buf, offset_t start, offset_t end,
                         bint labels_first, offset_t first_line, csr_rows* out,
                         parse_error* error) noexcept nogil:
    """Parse every line of buf[start:end] into `out`; return the rows parsed.

    Returns -1 with `error` filled in at the first malformed row, including
    a last line without its '\\n'.
    """
    cdef offset_t pos = start
    cdef offset_t line = first_line
    cdef offset_t line_end, row_end
    out.feature_indptr[0] = 0
    out.label_indptr[0] = 0
    while pos < end:
        line_end = find_line_end(buf, pos, end)
        if line_end < 0:
            return fail(error, NO_FINAL_NEWLINE, end, line, 0)
        row_end = text_end(buf, pos, line_end)
        if parse_line(buf, pos, row_end, labels_first, line, out, error) < 0:
            blame_control_character(buf, pos, row_end, error)
            return -1
        pos = line_end + 1
        line += 1
    return out.n_rows


cdef void count_delimiters(const unsigned char* buf, offset_t start, offset_t end,
                           offset_t* n_colons, offset_t* n_commas,
                           offset_t* n_newlines) noexcept nogil:
    """Count the bytes that bound the number of entries and rows of a body."""
    cdef offset_t i
    cdef offset_t colons = 0, commas = 0, newlines = 0
    cdef unsigned char c
    for i in range(start, end):
        c = buf[i]
        colons += c == c':'
        commas += c == c','
        newlines += c == c'\n'
    n_colons[0] = colons
    n_commas[0] = commas
    n_newlines[0] = newlines


def _trimmed(array, n):
    """Return array[:n], copied when that frees a noticeable amount of memory."""
    return array[:n].copy() if n < 0.9 * array.shape[0] else array[:n]


def parse_sparse_rows(const unsigned char[::1] data, offset_t start, bint labels_first,
                      offset_t first_line):
    """Parse the rows of a sparse text file body into CSR arrays.

    Parameters
    ----------
    data : bytes
        The whole file.
    start : int
        Byte offset where the body (the first row) starts.
    labels_first : bool
        Whether each row may start with a comma-separated label list
        (XC and libsvm formats) or holds only ``id:value`` tokens (BoW files).
    first_line : int
        1-based line number of the byte at ``start``.

    Returns
    -------
    arrays : tuple of ndarray or None
        ``(feature_indptr, feature_indices, feature_values, label_indptr,
        label_indices)``: int64, int32, float32, int64, int32; one row per line
        of the body, entries sorted within each row, zero values dropped.
        ``None`` when the body is malformed.
    error : tuple or None
        ``(code, offset, line, value)`` describing the first problem (see
        :class:`ParseErrorCode`), or ``None`` on success.
    """
    cdef offset_t end = data.shape[0]
    cdef offset_t n_colons, n_commas, n_newlines, n_rows
    cdef csr_rows out
    cdef parse_error error
    if start < 0 or start > end:
        raise ValueError(f"start={start} is outside the data (length {end})")
    cdef const unsigned char* buf = &data[0] if end > 0 else NULL
    with nogil:
        count_delimiters(buf, start, end, &n_colons, &n_commas, &n_newlines)
    # Arrays get at least one element so that taking the address of the first
    # is valid even for an empty body.
    cdef cnp.ndarray feature_indptr = np.zeros(n_newlines + 1, dtype=np.int64)
    cdef cnp.ndarray label_indptr = np.zeros(n_newlines + 1, dtype=np.int64)
    cdef cnp.ndarray feature_indices = np.empty(max(n_colons, 1), dtype=np.int32)
    cdef cnp.ndarray feature_values = np.empty(max(n_colons, 1), dtype=np.float32)
    # Every label is followed by a comma or ends its line's label list.
    cdef cnp.ndarray label_indices = np.empty(max(n_commas + n_newlines, 1), dtype=np.int32)
    out.feature_indptr = <offset_t*>cnp.PyArray_DATA(feature_indptr)
    out.feature_indices = <index_t*>cnp.PyArray_DATA(feature_indices)
    out.feature_values = <float32_t*>cnp.PyArray_DATA(feature_values)
    out.label_indptr = <offset_t*>cnp.PyArray_DATA(label_indptr)
    out.label_indices = <index_t*>cnp.PyArray_DATA(label_indices)
    out.n_rows = 0
    out.n_feature_entries = 0
    out.n_label_entries = 0
    error.code = PARSE_OK
    with nogil:
        n_rows = parse_rows(buf, start, end, labels_first, first_line, &out, &error)
    if n_rows < 0:
        return None, (error.code, error.offset, error.line, error.value)
    # One row per '\n' by construction, but the matrices are built from the
    # rows actually parsed, never from a count of delimiters.
    arrays = (
        feature_indptr[:n_rows + 1],
        _trimmed(feature_indices, out.n_feature_entries),
        _trimmed(feature_values, out.n_feature_entries),
        label_indptr[:n_rows + 1],
        _trimmed(label_indices, out.n_label_entries),
    )
    return arrays, None
