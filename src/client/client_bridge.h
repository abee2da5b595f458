/* client_bridge.h — for in-tree code only (the `firth` command, benchmarks, tests): converts
 * between the public firth_batch and the internal fr_batch, and reaches the embedded engine
 * behind a client. Nothing here is part of the public API. */
#ifndef FIRTH_CLIENT_BRIDGE_H
#define FIRTH_CLIENT_BRIDGE_H

#include "firth/firth.h"
#include "sql/sql.h"

/* Wraps b in a firth_batch. On success the firth_batch owns b (firth_batch_free frees it);
 * on failure (NULL, out of memory) the caller still owns b. */
firth_batch *firth_batch_wrap(fr_batch *b);
/* The batch inside; lives as long as the firth_batch. */
const fr_batch *firth_batch_unwrap(const firth_batch *b);

/* The embedded engine and SQL session of a client; they live as long as the client.
 * The session is not thread-safe (see firth_execute). */
fr_engine *firth_client_engine(firth_client *c);
fr_sql_session *firth_client_session(firth_client *c);

/* Copies an internal error into a public one; returns its code. */
int firth_error_from(const fr_error *in, firth_error *out);

#endif
