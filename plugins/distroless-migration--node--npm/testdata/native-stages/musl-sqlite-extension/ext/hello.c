#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

static void hello(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx, "hello", -1, SQLITE_STATIC);
}

int sqlite3_hello_init(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  (void)err;
  SQLITE_EXTENSION_INIT2(api);
  return sqlite3_create_function(db, "hello", 0, SQLITE_UTF8, 0, hello, 0, 0);
}
