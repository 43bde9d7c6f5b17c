// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fork-set manifest (cli.md §4): the JSON document `fork create` prints, and the file it
// keeps up to date while it runs so that `teardown --manifest` can always finish the job.
// It holds secrets, so the file is written with mode 0600, atomically (temp file in the same
// directory + rename), and is always a superset of what exists: a fork is recorded as
// `pending` before its request is sent.

#include "tfork/core/error.hpp"
#include "tfork/iam/access_keys.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/output/render.hpp"
#include "tfork/workflow/expiry.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::workflow {

// A fork's status in the manifest: the statuses of every batch (output::Status, whose
// status_name() gives the word), of which a manifest holds pending, created, exists, failed,
// rolled_back, deleted (removed by teardown, its key revoked) and not_attempted.
using ForkStatus = output::Status;
// The status a manifest's "status" word names; nullopt for any other word.
std::optional<ForkStatus> parse_fork_status(std::string_view text);

// How an agent run by `fork exec` / `run` in this fork ended (cli.md §11).
struct AgentRecord {
  std::optional<int> exit_code;       // when it exited
  std::optional<std::string> signal;  // "SIGTERM" when a signal ended it
  double seconds = 0;
  std::string workdir;  // its working directory DIR/<fork> ("" : tfork's, --sandbox none)
};

struct ManifestFork {
  std::string bucket;
  ForkStatus status = ForkStatus::pending;
  std::string access_key_id;         // "" when there is no key (yet)
  std::string secret_access_key;     // "" when there is no key (yet)
  std::optional<iam::Role> role;     // nullopt with --keys none
  std::optional<Error> error;        // why the fork or its key failed
  std::optional<AgentRecord> agent;  // its last agent's end, once one ran
  bool key_revoked = false;          // teardown revoked the key (the id stays for the record)

  // A key was asked for but its id is not recorded (the run stopped while the request was in
  // flight): a key named `<bucket>-key` may exist, and teardown looks for it.
  bool key_may_be_unrecorded() const {
    return role && access_key_id.empty() && !error && !key_revoked &&
           (status == ForkStatus::pending || status == ForkStatus::created ||
            status == ForkStatus::exists);
  }
  // Teardown's view: may this run have left this bucket behind?
  bool may_exist() const;
};

struct Manifest {
  std::string source;
  std::string snapshot;  // "" until the snapshot is known
  // The run took `snapshot` itself (so teardown deletes it with the last fork, cli.md §5),
  // under this name; a run killed before it learnt the version is found by the name.
  bool snapshot_taken = false;
  std::string snapshot_name;
  std::string endpoint;
  std::string iam_endpoint;
  std::vector<ManifestFork> forks;
  // --expires-in: when the run's forks expire ("expires_at", RFC 3339 UTC; null when never).
  // The snapshot's name carries the same instant (tfork/workflow/expiry.hpp).
  std::optional<ExpiryTime> expires_at;
};

// Whether the manifest records anything that may still exist (a fork or a key): such a file
// is another run's record and is never overwritten (cli.md §4.4).
bool records_live_resources(const Manifest& manifest);

// The key each fork's access key is created under (cli.md §4.3).
std::string key_name_for(std::string_view bucket);

// Reads back an error written by output::item_error_json.
Error item_error_from_json(const output::Json& json);

output::Json to_json(const Manifest& manifest);
// Throws TforkError(usage) naming what is wrong when the document is not a manifest.
Manifest manifest_from_json(const output::Json& json);

// The table for people: never a secret (bucket, status, key id, role, error).
std::string to_table(const Manifest& manifest);

// Writes the manifest atomically with mode 0600. `durable` adds fsync of the file and its
// directory (the final write of a run); intermediate writes only need to survive the process
// being killed, which rename alone guarantees. Throws TforkError(other) on I/O errors.
void write_manifest(const std::filesystem::path& path, const Manifest& manifest, bool durable);
// Throws TforkError(usage) when the file is missing, unreadable or not a manifest.
Manifest read_manifest(const std::filesystem::path& path);

// A run's hold on its manifest path for as long as it lives (issue 21 §2): an exclusive lock
// on `<manifest>.lock` (flock, released by the kernel if the process dies), removed again when
// the claim ends. A second run given the same manifest meanwhile gets TforkError(conflict,
// exit 6) at once and changes nothing.
class ManifestClaim {
 public:
  explicit ManifestClaim(const std::filesystem::path& manifest);
  ~ManifestClaim();
  ManifestClaim(const ManifestClaim&) = delete;
  ManifestClaim& operator=(const ManifestClaim&) = delete;

 private:
  std::filesystem::path lock_path_;
  int fd_ = -1;
};

}  // namespace tfork::workflow
