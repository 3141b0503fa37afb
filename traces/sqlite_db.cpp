#include "traces/sqlite_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace mimic::traces {
namespace {

std::string db_path(sqlite3* db) {
  const char* p = db ? sqlite3_db_filename(db, "main") : nullptr;
  return p ? p : "";
}

}  // namespace

void throw_sql_error(sqlite3* db, int rc, const std::string& what) {
  int primary = rc & 0xff;
  std::string reason = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int sys = db ? sqlite3_system_errno(db) : 0;
  if (sys != 0 && primary != SQLITE_BUSY && primary != SQLITE_LOCKED)
    reason += fmt::format(" ({})", std::strerror(sys));
  throw SqlError(fmt::format("trace '{}': {}: {}", db_path(db), what, reason), primary);
}

bool is_busy_error(const std::exception& e) {
  auto* sql = dynamic_cast<const SqlError*>(&e);
  return sql && sql->busy();
}

std::string sqlite_version() {
  return sqlite3_libversion();
}

void backoff_sleep(int attempt) {
  int ms = std::min(50, 1 << std::min(attempt, 6));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

void throw_lock_timeout(const Db& db, std::chrono::milliseconds waited) {
  throw IoError(fmt::format("trace '{}': another process held the write lock for {:.1f} s; gave up",
                            db.path(), waited.count() / 1000.0));
}

// ---- Stmt ----

Stmt::Stmt(sqlite3* db, std::string_view sql, const std::string& what) : what_(what) {
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) throw_sql_error(db, rc, "prepare " + what);
}

Stmt::~Stmt() {
  sqlite3_finalize(stmt_);
}

Stmt::Stmt(Stmt&& o) noexcept : stmt_(o.stmt_), what_(std::move(o.what_)) {
  o.stmt_ = nullptr;
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    stmt_ = o.stmt_;
    what_ = std::move(o.what_);
    o.stmt_ = nullptr;
  }
  return *this;
}

Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_);
  sqlite3_reset(stmt_);
  throw_sql_error(db, rc, what_);
}

void Stmt::run() {
  step();
  sqlite3_reset(stmt_);
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Stmt::int_at(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
double Stmt::real_at(int col) const {
  return sqlite3_column_double(stmt_, col);
}
bool Stmt::null_at(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
bool Stmt::integer_at(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_INTEGER;
}
bool Stmt::real_number_at(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_FLOAT;
}
int Stmt::columns() const {
  return sqlite3_column_count(stmt_);
}

std::string Stmt::text_at(int col) const {
  const unsigned char* t = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(n)) : std::string();
}

std::string Stmt::column_name(int col) const {
  const char* n = sqlite3_column_name(stmt_, col);
  return n ? n : "";
}

// ---- Db ----

namespace {

// "file:" URI of `path` with `query`, '%', '?' and '#' escaped (SQLite's URI filenames).
std::string file_uri(const std::string& path, const char* query) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  return uri + "?" + query;
}

}  // namespace

Db::Db(const std::string& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX;
  std::string name = path;
  if (mode == Mode::read_write_create) {
    flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  } else {
    flags |= SQLITE_OPEN_READONLY;
  }
  if (mode == Mode::read_only_immutable) {
    flags |= SQLITE_OPEN_URI;
    name = file_uri(path, "immutable=1");
  }
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string reason = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    int sys = db_ ? sqlite3_system_errno(db_) : 0;
    if (sys != 0) reason += fmt::format(" ({})", std::strerror(sys));
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqlError(fmt::format("cannot open trace '{}': {}", path, reason), rc & 0xff);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
  sqlite3_close_v2(db_);
}

Db::Db(Db&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) {
  o.db_ = nullptr;
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    sqlite3_close_v2(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

bool Db::read_only() const {
  return sqlite3_db_readonly(db_, "main") == 1;
}

void Db::exec(std::string_view sql, const std::string& what) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) throw_sql_error(db_, rc, what);
}

Stmt Db::prepare(std::string_view sql, const std::string& what) const {
  return Stmt(db_, sql, what);
}

int64_t Db::query_int(std::string_view sql, const std::string& what) const {
  Stmt s(db_, sql, what);
  return s.step() ? s.int_at(0) : 0;
}

std::string Db::query_text(std::string_view sql, const std::string& what) const {
  Stmt s(db_, sql, what);
  return s.step() ? s.text_at(0) : std::string();
}

int64_t Db::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}
int Db::changes() const {
  return sqlite3_changes(db_);
}

void Db::set_busy_timeout(std::chrono::milliseconds ms) {
  sqlite3_busy_timeout(db_, static_cast<int>(ms.count()));
}

}  // namespace mimic::traces
