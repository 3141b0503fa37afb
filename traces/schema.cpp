#include "traces/schema.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "traces/schema_sql.h"

namespace mimic::traces {
namespace {

namespace fs = std::filesystem;

// Migration i takes a file from version i to i + 1.
constexpr std::array<const char*, kSchemaVersion> kMigrations = {
    sql::kMigrationV1, sql::kMigrationV2, sql::kMigrationV3, sql::kMigrationV4, sql::kMigrationV5};

enum class FileKind { missing, empty, sqlite };

// Looks at the file before SQLite does, so that a file that is not a database is reported as
// such and never touched.
FileKind inspect_file(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return FileKind::missing;
  if (fs::is_directory(st))
    throw IoError(fmt::format("trace '{}' is a directory, not a file", path));
  if (!fs::is_regular_file(st))
    throw IoError(fmt::format("trace '{}' is not a regular file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("cannot read trace '{}': {}", path, std::strerror(errno)));
  char header[16] = {};
  in.read(header, sizeof header);
  std::streamsize n = in.gcount();
  if (n == 0) return FileKind::empty;
  if (n < 16 || std::memcmp(header, "SQLite format 3", 16) != 0)
    throw IoError(fmt::format("'{}' is not a mimic trace: not an SQLite database", path));
  return FileKind::sqlite;
}

void check_can_create(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    throw IoError(fmt::format("cannot create trace '{}': directory '{}' does not exist", path,
                              parent.string()));
  if (access(parent.c_str(), W_OK) != 0)
    throw IoError(fmt::format("cannot create trace '{}': directory '{}' is not writable ({})", path,
                              parent.string(), std::strerror(errno)));
}

// Runs a read that may meet another process's lock (e.g. while it switches the file to WAL).
template <class F>
auto retry_busy(const Db& db, const OpenOptions& o, F&& f) {
  auto start = std::chrono::steady_clock::now();
  for (int attempt = 0;; ++attempt) {
    try {
      return f();
    } catch (const SqlError& e) {
      if (!e.busy()) throw;
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      if (waited >= o.lock_give_up) throw_lock_timeout(db, waited);
      backoff_sleep(attempt);
    }
  }
}

// Refuses files this build must not touch. Returns the schema version (0 for a new, empty file).
// The version, the application id and the table count are read in one statement, so from one
// snapshot: read one by one, another process's creation of the schema could commit in between
// (version 0, then its tables), and a trace being created would look like a foreign database.
int check_identity_once(const Db& db) {
  const std::string& path = db.path();
  Stmt identity = db.prepare(
      "SELECT (SELECT user_version FROM pragma_user_version), "
      "(SELECT application_id FROM pragma_application_id), (SELECT COUNT(*) FROM sqlite_master)",
      "read schema version");
  identity.step();
  const int version = static_cast<int>(identity.int_at(0));
  const int64_t app = identity.int_at(1), tables = identity.int_at(2);
  if (version > kSchemaVersion)
    throw IoError(fmt::format(
        "trace '{}' has schema version {}, newer than version {} that this mimic ({}) understands: "
        "use a newer mimic (the file was not modified)",
        path, version, kSchemaVersion, MIMIC_VERSION));
  if (version < 0)  // SQLite's user_version is a signed 32-bit field; mimic writes 1 and up
    throw IoError(fmt::format(
        "trace '{}' has schema version {}, which no mimic writes: the file is damaged (it was not "
        "modified)",
        path, version));
  if (version == 0) {
    if (tables > 0 || app != 0)
      throw IoError(
          fmt::format("'{}' is an SQLite database but not a mimic trace ({} tables, no mimic "
                      "schema version)",
                      path, tables));
  } else if (app != kApplicationId) {
    throw IoError(fmt::format(
        "'{}' is an SQLite database but not a mimic trace (application_id {:#x})", path, app));
  }
  return version;
}

// Every read may meet another process's lock while it creates the file or switches it to WAL.
int check_identity(const Db& db, const OpenOptions& o) {
  return retry_busy(db, o, [&] { return check_identity_once(db); });
}

void enable_wal(Db& db, const OpenOptions& o) {
  auto start = std::chrono::steady_clock::now();
  for (int attempt = 0;; ++attempt) {
    std::string mode;
    try {
      mode = db.query_text("PRAGMA journal_mode=WAL", "switch to WAL mode");
    } catch (const SqlError& e) {
      if (!e.busy()) throw;
    }
    if (mode == "wal") break;
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (waited >= o.lock_give_up) throw_lock_timeout(db, waited);
    backoff_sleep(attempt);
  }
  // WAL + NORMAL: a crash of the process loses nothing committed; only a power loss may lose the
  // last transactions, and never corrupts the file.
  db.exec("PRAGMA synchronous=NORMAL", "set synchronous");
}

void migrate(Db& db, const OpenOptions& o) {
  with_write_transaction(
      db, o.lock_give_up,
      [&] {
        // Re-read inside the write lock: another process may have migrated meanwhile.
        int version = check_identity(db, o);
        if (version == kSchemaVersion) return;
        for (int v = version; v < kSchemaVersion; ++v)
          db.exec(kMigrations[v], fmt::format("migrate schema to version {}", v + 1));
        db.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion), "set schema version");
        db.exec(fmt::format("PRAGMA application_id = {}", kApplicationId), "set application_id");
        Stmt put =
            db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", "write meta");
        auto set = [&](const char* k, const std::string& v) { put.bind(1, k).bind(2, v).run(); };
        set("format", "mimic-trace");
        set("schema_version", std::to_string(kSchemaVersion));
        set("written_by", fmt::format("mimic {}", MIMIC_VERSION));
        if (version == 0) set("created_at", utc_now());
      },
      [] {});
}

}  // namespace

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

int schema_version(const Db& db) {
  return static_cast<int>(db.query_int("PRAGMA user_version", "read schema version"));
}

Db open_for_write(const std::string& path, const OpenOptions& options) {
  if (path.empty()) throw IoError("trace file name is empty");
  FileKind kind = inspect_file(path);
  if (kind == FileKind::missing) check_can_create(path);
  Db db(path, Db::Mode::read_write_create);
  if (db.read_only())
    throw IoError(fmt::format("trace '{}' is read-only: cannot append runs to it", path));
  db.set_busy_timeout(options.busy_timeout);
  check_identity(db, options);
  enable_wal(db, options);
  migrate(db, options);
  return db;
}

namespace {

bool can_write(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  return access(path.c_str(), W_OK) == 0 && access(parent.c_str(), W_OK) == 0;
}

// Opens `path` to read and checks it is a trace; returns its schema version. A file in WAL mode
// whose -shm this process cannot create (a read-only file or directory) opens immutable.
int open_checked(Db& db, const std::string& path, const OpenOptions& options) {
  try {
    db = Db(path, Db::Mode::read_only);
    db.set_busy_timeout(options.busy_timeout);
    return check_identity(db, options);
  } catch (const SqlError& e) {
    if (e.code() != SQLITE_READONLY && e.code() != SQLITE_CANTOPEN) throw;
  }
  db = Db(path, Db::Mode::read_only_immutable);
  return check_identity(db, options);
}

// A trace of an older schema that this process cannot upgrade in place: a copy (with its WAL)
// in the temporary directory is upgraded and read, and removed once open.
Db open_upgraded_copy(const std::string& path, int version, const OpenOptions& options) {
  std::string tmp = (fs::temp_directory_path() / "mimic-trace-XXXXXX").string();
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    throw IoError(
        fmt::format("trace '{}' (schema version {}) is read-only, and no temporary copy "
                    "could be made to upgrade: {}",
                    path, version, std::strerror(errno)));
  close(fd);
  auto remove_all = [&] {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(tmp + suffix, ec);
  };
  try {
    fs::copy_file(path, tmp, fs::copy_options::overwrite_existing);
    if (fs::exists(path + "-wal")) fs::copy_file(path + "-wal", tmp + "-wal");
    for (const char* suffix : {"", "-wal"})  // the copies took the original's read-only mode
      if (fs::exists(tmp + suffix))
        fs::permissions(tmp + suffix, fs::perms::owner_read | fs::perms::owner_write);
    Db upgraded = open_for_write(tmp, options);
    upgraded.exec("PRAGMA journal_mode=DELETE", "fold the copy's WAL into it");
    upgraded = Db();
    Db db(tmp, Db::Mode::read_only_immutable);
    check_identity(db, options);
    remove_all();
    return db;
  } catch (const fs::filesystem_error& e) {
    remove_all();
    throw IoError(
        fmt::format("trace '{}' (schema version {}) is read-only, and copying it to "
                    "upgrade failed: {}",
                    path, version, e.code().message()));
  } catch (...) {
    remove_all();
    throw;
  }
}

}  // namespace

Db open_for_read(const std::string& path, const OpenOptions& options) {
  if (path.empty()) throw IoError("trace file name is empty");
  FileKind kind = inspect_file(path);
  if (kind == FileKind::missing) throw IoError(fmt::format("trace '{}' does not exist", path));
  if (kind == FileKind::empty)
    throw IoError(fmt::format("'{}' is not a mimic trace: the file is empty", path));
  Db db;
  int version = open_checked(db, path, options);
  if (version == 0)
    throw IoError(fmt::format("'{}' is not a mimic trace: it has no mimic schema", path));
  if (version < kSchemaVersion) {
    // Migrations only add; upgrading in place keeps every run readable by older tools' data.
    db = Db();
    if (!can_write(path)) return open_upgraded_copy(path, version, options);
    open_for_write(path, options);
    open_checked(db, path, options);
  }
  return db;
}

}  // namespace mimic::traces
