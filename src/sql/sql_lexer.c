/* sql_lexer.c — splits SQL text into tokens, on demand, and tracks the line and column of
 * each. Also the position-prefixed error helpers the whole module uses.
 *
 * The lexer reads at most lx->len bytes and never past them (the text need not be
 * NUL-terminated and may hold NUL bytes, which are rejected as characters). Keywords are
 * not told apart here: a bare word is SQL_T_IDENT and the parser decides what it means. */
#include <ctype.h>
#include <stdio.h>

#include "sql/sql_int.h"

/* ---- errors with positions ------------------------------------------------------------- */

int sql_fail_at(fr_error *err, int code, sql_pos pos, const char *fmt, ...)
{
    char msg[FR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fr_fail(err, code, "line %d, column %d: %s", pos.line, pos.col, msg);
}

int sql_wrap_at(fr_error *err, sql_pos pos)
{
    if (!err) return FR_EINVAL;
    if (strncmp(err->msg, "line ", 5) == 0 && isdigit((unsigned char)err->msg[5]))
        return err->code;
    char prefix[48];
    int k = snprintf(prefix, sizeof prefix, "line %d, column %d: ", pos.line, pos.col);
    size_t plen = (size_t)k < sizeof prefix ? (size_t)k : sizeof prefix - 1;
    size_t mlen = strnlen(err->msg, sizeof err->msg - 1);
    if (plen + mlen > sizeof err->msg - 1) mlen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
    return err->code;
}

bool sql_tok_is(const sql_token *t, const char *kw)
{
    size_t n = strlen(kw);
    return t->kind == SQL_T_IDENT && t->n == n && strncasecmp(t->p, kw, n) == 0;
}

/* ---- the lexer ------------------------------------------------------------------------- */

void sql_lexer_init(sql_lexer *lx, const char *text, size_t len)
{
    lx->text = text;
    lx->len = len;
    lx->off = 0;
    lx->line = 1;
    lx->col = 1;
}

static int peek_at(const sql_lexer *lx, size_t k)
{
    return lx->off + k < lx->len ? (unsigned char)lx->text[lx->off + k] : -1;
}

/* Moves past one byte, keeping line and column (in characters) right. */
static void advance(sql_lexer *lx)
{
    unsigned char c = (unsigned char)lx->text[lx->off++];
    if (c == '\n') {
        lx->line++;
        lx->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        lx->col++;
    }
}

static sql_pos here(const sql_lexer *lx)
{
    return (sql_pos){lx->line, lx->col};
}

static bool is_word_start(int c) { return c >= 0 && (isalpha(c) || c == '_'); }
static bool is_word_char(int c) { return c >= 0 && (isalnum(c) || c == '_'); }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* Skips blanks, `-- line` and `/ * block * /` comments. */
static int skip_blanks(sql_lexer *lx, fr_error *err)
{
    for (;;) {
        int c = peek_at(lx, 0);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            advance(lx);
        } else if (c == '-' && peek_at(lx, 1) == '-') {
            while (lx->off < lx->len && lx->text[lx->off] != '\n') advance(lx);
        } else if (c == '/' && peek_at(lx, 1) == '*') {
            sql_pos start = here(lx);
            advance(lx);
            advance(lx);
            for (;;) {
                if (lx->off >= lx->len)
                    return sql_fail_at(err, FR_ESYNTAX, start, "unterminated /* comment");
                if (peek_at(lx, 0) == '*' && peek_at(lx, 1) == '/') {
                    advance(lx);
                    advance(lx);
                    break;
                }
                advance(lx);
            }
        } else {
            return 0;
        }
    }
}

/* Reads a quoted run ending in `quote`, where a doubled quote stands for one. */
static int lex_quoted(sql_lexer *lx, char quote, sql_pos start, const char *what,
                      fr_error *err)
{
    advance(lx); /* the opening quote */
    for (;;) {
        if (lx->off >= lx->len)
            return sql_fail_at(err, FR_ESYNTAX, start, "unterminated %s", what);
        if (lx->text[lx->off] == quote) {
            advance(lx);
            if (peek_at(lx, 0) != quote) return 0;
        }
        advance(lx);
    }
}

/* 123, 12.50, .5, 5., 1.5e3, 1e-3. A number running into a letter ("12abc") is an error. */
static int lex_number(sql_lexer *lx, sql_token *t, fr_error *err)
{
    sql_tok_kind kind = SQL_T_INTEGER;
    while (is_digit(peek_at(lx, 0))) advance(lx);
    if (peek_at(lx, 0) == '.') {
        kind = SQL_T_DECIMAL;
        advance(lx);
        while (is_digit(peek_at(lx, 0))) advance(lx);
    }
    int c = peek_at(lx, 0);
    if (c == 'e' || c == 'E') {
        int k = 1;
        if (peek_at(lx, 1) == '+' || peek_at(lx, 1) == '-') k = 2;
        if (!is_digit(peek_at(lx, (size_t)k)))
            return sql_fail_at(err, FR_ESYNTAX, t->pos,
                               "malformed number: the exponent needs digits");
        kind = SQL_T_FLOAT;
        for (int i = 0; i < k; i++) advance(lx);
        while (is_digit(peek_at(lx, 0))) advance(lx);
    }
    if (is_word_char(peek_at(lx, 0)) || peek_at(lx, 0) == '.')
        return sql_fail_at(err, FR_ESYNTAX, t->pos,
                           "malformed number: '%c' right after its digits", peek_at(lx, 0));
    t->kind = kind;
    return 0;
}

/* Operators and punctuation. Returns false when c starts none. */
static bool lex_operator(sql_lexer *lx, sql_token *t)
{
    int c = peek_at(lx, 0), d = peek_at(lx, 1);
    sql_tok_kind k;
    int n = 1;
    switch (c) {
    case '(': k = SQL_T_LPAREN; break;
    case ')': k = SQL_T_RPAREN; break;
    case ',': k = SQL_T_COMMA; break;
    case ';': k = SQL_T_SEMI; break;
    case '.': k = SQL_T_DOT; break;
    case '*': k = SQL_T_STAR; break;
    case '+': k = SQL_T_PLUS; break;
    case '-': k = SQL_T_MINUS; break;
    case '/': k = SQL_T_SLASH; break;
    case '%': k = SQL_T_PERCENT; break;
    case '=': k = SQL_T_EQ; break;
    case '|':
        if (d != '|') return false;
        k = SQL_T_CONCAT;
        n = 2;
        break;
    case '!':
        if (d != '=') return false;
        k = SQL_T_NE;
        n = 2;
        break;
    case '<':
        k = d == '=' ? SQL_T_LE : d == '>' ? SQL_T_NE : SQL_T_LT;
        n = k == SQL_T_LT ? 1 : 2;
        break;
    case '>':
        k = d == '=' ? SQL_T_GE : SQL_T_GT;
        n = k == SQL_T_GT ? 1 : 2;
        break;
    default:
        return false;
    }
    t->kind = k;
    for (int i = 0; i < n; i++) advance(lx);
    return true;
}

int sql_lex(sql_lexer *lx, sql_token *out, fr_error *err)
{
    FR_TRY(skip_blanks(lx, err));
    sql_token t = {.kind = SQL_T_EOF, .p = lx->text + lx->off, .off = lx->off, .pos = here(lx)};
    int c = peek_at(lx, 0);
    if (c < 0) {
        *out = t;
        return 0;
    }
    if ((c == 'x' || c == 'X') && peek_at(lx, 1) == '\'') {
        advance(lx);
        FR_TRY(lex_quoted(lx, '\'', t.pos, "X'...' bytes literal", err));
        t.kind = SQL_T_BYTES;
    } else if (is_word_start(c)) {
        /* '$' inside a word, as Flink allows, names virtual tables: orders$changelog. */
        while (is_word_char(peek_at(lx, 0)) || peek_at(lx, 0) == '$') advance(lx);
        t.kind = SQL_T_IDENT;
        if (lx->off - t.off > FR_NAME_BYTES_MAX)
            return sql_fail_at(err, FR_ELIMIT, t.pos, "name longer than %d bytes",
                               FR_NAME_BYTES_MAX);
    } else if (c == '`') {
        FR_TRY(lex_quoted(lx, '`', t.pos, "`quoted name`", err));
        t.kind = SQL_T_QIDENT;
    } else if (c == '\'') {
        FR_TRY(lex_quoted(lx, '\'', t.pos, "string literal", err));
        t.kind = SQL_T_STRING;
    } else if (is_digit(c) || (c == '.' && is_digit(peek_at(lx, 1)))) {
        FR_TRY(lex_number(lx, &t, err));
    } else if (!lex_operator(lx, &t)) {
        if (c >= 0x20 && c < 0x7F)
            return sql_fail_at(err, FR_ESYNTAX, t.pos, "unexpected character '%c'", c);
        return sql_fail_at(err, FR_ESYNTAX, t.pos, "unexpected byte 0x%02x", c);
    }
    t.n = lx->off - t.off;
    *out = t;
    return 0;
}

void sql_token_describe(const sql_token *t, char *out, size_t cap)
{
    if (t->kind == SQL_T_EOF) {
        snprintf(out, cap, "end of input");
        return;
    }
    enum { SHOWN = 32 };
    char text[SHOWN * 4 + 1];
    size_t n = 0;
    for (size_t i = 0; i < t->n && n < SHOWN; i++) {
        unsigned char c = (unsigned char)t->p[i];
        text[n++] = (c >= 0x20 && c != 0x7F) ? (char)c : '?';
    }
    text[n] = '\0';
    snprintf(out, cap, "'%s%s'", text, t->n > SHOWN ? "..." : "");
}
