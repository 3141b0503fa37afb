// A thin RAII layer over the SQLite C API: one connection (Db), prepared statements (Stmt), and
// the retry rule every writer follows when another process holds the write lock. sqlite3.h stays
// in the .cpp files: code that includes traces/ headers never sees it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mimic::traces {

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql, const std::string& what);
  ~Stmt();
  Stmt(Stmt&& o) noexcept;
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Parameters are 1-based, as in SQLite.
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);  // copied by SQLite (SQLITE_TRANSIENT)
  Stmt& bind_null(int i);
  // Steps once: true while a row is available. Throws SqlError on errors.
  bool step();
  // Steps a statement that returns no rows, then resets it for reuse.
  void run();
  void reset();

  int64_t int_at(int col) const;
  double real_at(int col) const;
  std::string text_at(int col) const;
  bool null_at(int col) const;
  bool integer_at(int col) const;      // the value's storage class is INTEGER
  bool real_number_at(int col) const;  // REAL
  int columns() const;
  std::string column_name(int col) const;

  sqlite3_stmt* raw() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;  // for error messages: "insert event"
};

// An SQLite failure: a mimic::IoError whose message names the file and the operation, and which
// keeps SQLite's primary result code so writers can tell "busy, try again" from "disk full".
class SqlError : public IoError {
 public:
  SqlError(const std::string& message, int code) : IoError(message), code_(code) {}
  int code() const { return code_; }  // primary result code (SQLITE_BUSY = 5, ...)
  bool busy() const { return code_ == 5 || code_ == 6; }

 private:
  int code_;
};

class Db {
 public:
  // read_only_immutable: SQLite's immutable=1, for a file no one changes while it is open; it
  // needs neither a -shm file nor a writable directory.
  enum class Mode { read_only, read_only_immutable, read_write_create };
  Db() = default;
  // Opens (and, in read_write_create, creates) `path`. Throws IoError with SQLite's reason.
  Db(const std::string& path, Mode mode);
  ~Db();
  Db(Db&& o) noexcept;
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }
  bool read_only() const;

  // Runs one or more statements that return no rows.
  void exec(std::string_view sql, const std::string& what);
  Stmt prepare(std::string_view sql, const std::string& what) const;
  // First column of the first row as an integer (0 when there is no row).
  int64_t query_int(std::string_view sql, const std::string& what) const;
  std::string query_text(std::string_view sql, const std::string& what) const;
  int64_t last_insert_rowid() const;
  int changes() const;
  void set_busy_timeout(std::chrono::milliseconds ms);

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// Throws the IoError for a failed SQLite call on `db` (message: "trace 'PATH': WHAT: reason").
[[noreturn]] void throw_sql_error(sqlite3* db, int rc, const std::string& what);
// True for SQLITE_BUSY / SQLITE_LOCKED failures (another connection holds a lock).
bool is_busy_error(const std::exception& e);

// Runs `body` inside BEGIN IMMEDIATE ... COMMIT. When another connection holds the write lock past
// the busy timeout, or a statement reports SQLITE_BUSY/LOCKED, the transaction is rolled back,
// `on_rollback` undoes in-memory state that referred to it, and the whole body is retried until
// `give_up_after` has passed (then IoError). Other errors roll back and propagate.
template <class Body, class OnRollback>
void with_write_transaction(Db& db, std::chrono::milliseconds give_up_after, Body&& body,
                            OnRollback&& on_rollback);

// The SQLite library's version ("3.40.1"), for benchmark and bug reports.
std::string sqlite_version();

// Sleep between retries: grows from 1 ms to 50 ms.
void backoff_sleep(int attempt);
[[noreturn]] void throw_lock_timeout(const Db& db, std::chrono::milliseconds waited);

template <class Body, class OnRollback>
void with_write_transaction(Db& db, std::chrono::milliseconds give_up_after, Body&& body,
                            OnRollback&& on_rollback) {
  auto start = std::chrono::steady_clock::now();
  for (int attempt = 0;; ++attempt) {
    bool began = false;
    try {
      db.exec("BEGIN IMMEDIATE", "begin transaction");
      began = true;
      body();
      db.exec("COMMIT", "commit");
      return;
    } catch (const std::exception& e) {
      if (began) {
        try {
          db.exec("ROLLBACK", "rollback");
        } catch (const std::exception&) {
          // A failed COMMIT may already have rolled back: nothing to undo in the file.
        }
      }
      on_rollback();
      if (!is_busy_error(e)) throw;
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      if (waited >= give_up_after) throw_lock_timeout(db, waited);
      backoff_sleep(attempt);
    }
  }
}

}  // namespace mimic::traces
