#!/usr/bin/env bash
# Runs the README's quickstart against an embedded data directory: creates a database and a
# table, inserts and selects with SQL, appends NDJSON records with `firth produce`, and reads
# them back with `firth consume`. Each command is printed before its output.
#
# Usage: scripts/quickstart.sh FIRTH_BINARY DATA_DIR      (`make quickstart` calls it)
#
# Idempotent: the database is created IF NOT EXISTS and the table shop.orders is dropped and
# created again, so every run starts the table fresh and prints the same rows.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 FIRTH_BINARY DATA_DIR" >&2
    exit 2
fi
bin=$1
data=$2
if [ ! -x "$bin" ]; then
    echo "quickstart: $bin is not an executable; build it first (make)" >&2
    exit 1
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

# The commands below read as the README writes them: `firth` is the binary given.
firth() { "$bin" "$@"; }

# Prints a command (read from stdin) the way a user would type it, then runs it.
step() {
    local cmd
    cmd=$(cat)
    printf '\n$ %s\n' "${cmd//\$FIRTH_DATA/$data}"
    eval "$cmd"
}

FIRTH_DATA=$data
echo "firth quickstart: data directory $data"

step <<'CMD'
firth --version
CMD

step <<'CMD'
firth sql --data-dir "$FIRTH_DATA" -e "CREATE DATABASE IF NOT EXISTS shop"
CMD

step <<'CMD'
firth sql --data-dir "$FIRTH_DATA" -e "
  DROP TABLE IF EXISTS shop.orders;
  CREATE TABLE shop.orders (
    id         BIGINT NOT NULL,
    item       STRING,
    qty        INT,
    price      DECIMAL(10, 2),
    ordered_at TIMESTAMP(3)
  ) WITH ('bucket.num' = '2')"
CMD

step <<'CMD'
firth sql --data-dir "$FIRTH_DATA" -e "
  INSERT INTO shop.orders VALUES
    (1, 'tea',    2, 3.50, '2026-01-31 09:00:00'),
    (2, 'coffee', 1, 4.20, '2026-01-31 09:05:00'),
    (3, 'milk',   6, 1.10, NULL)"
CMD

step <<'CMD'
firth sql --data-dir "$FIRTH_DATA" -e "SELECT * FROM shop.orders WHERE price > 2"
CMD

step <<'CMD'
printf '%s\n' \
  '{"id": 4, "item": "bread", "qty": 1, "price": "2.80", "ordered_at": "2026-01-31 10:00:00"}' \
  '{"id": 5, "item": "jam", "qty": 2, "price": 5.25}' \
  '{"id": 6, "item": "tea", "qty": 3, "price": "3.50"}' |
firth produce --data-dir "$FIRTH_DATA" --table shop.orders
CMD

step <<'CMD'
firth consume --data-dir "$FIRTH_DATA" --table shop.orders --columns id,item,price
CMD

step <<'CMD'
firth consume --data-dir "$FIRTH_DATA" --table shop.orders --format csv --where "qty > 1"
CMD

step <<'CMD'
firth sql --data-dir "$FIRTH_DATA" -e "SELECT item, qty, price FROM shop.orders WHERE item = 'tea'"
CMD

step <<'CMD'
firth sql --data-dir "$FIRTH_DATA" -e "
  SELECT item, COUNT(*) AS orders, SUM(qty * price) AS total
  FROM shop.orders GROUP BY item ORDER BY total DESC LIMIT 3"
CMD

cat <<EOF

Done. The quickstart created database shop and table shop.orders (2 buckets), inserted 3
rows with SQL, appended 3 more from NDJSON with firth produce, and read them back with SQL
(a filter, then totals per item with GROUP BY and ORDER BY) and with firth consume
(--columns, --where, CSV).

The data is in this embedded firth data directory:
  $data
Running the quickstart again is safe: it drops and recreates shop.orders. Go on with:
  $bin sql --data-dir $data
  $bin consume --data-dir $data --table shop.orders --format arrow > orders.arrows
  $bin --help
EOF
