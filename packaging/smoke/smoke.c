/* test-dist: a program built against the installed C tarball locks on the nodes in QL_NODES
 * and reports the release version. Built twice: with pkg-config (shared library) and with
 * CMake's quorumlock::static target. Usage: smoke-c VERSION LABEL */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quorumlock.h>

static int passed, failed;

static void check(const char *label, const char *name, int ok, const char *detail) {
  if (ok) passed++; else failed++;
  printf("  %s %s: %s%s%s%s\n", ok ? "ok  " : "FAIL", label, name, ok ? "" : " (", ok ? "" : detail,
         ok ? "" : ")");
}

static quorumlock_client *open_client(const char *nodes) {
  quorumlock_config *cfg = NULL;
  quorumlock_config_new(&cfg);
  for (const char *p = nodes; *p;) {
    size_t len = strcspn(p, ",");
    quorumlock_config_add_node(cfg, (const uint8_t *)p, len, NULL);
    p += len + (p[len] == ',');
  }
  quorumlock_config_set_require_quorum(cfg, true);
  quorumlock_client *client = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_new(cfg, &client, &err);
  quorumlock_config_free(cfg);
  if (r != QL_OK) {
    char msg[1024] = "";
    quorumlock_error_message(err, msg, sizeof msg, NULL);
    fprintf(stderr, "connect: %s: %s\n", quorumlock_result_name(r), msg);
  }
  quorumlock_error_free(err);
  return r == QL_OK ? client : NULL;
}

int main(int argc, char **argv) {
  const char *nodes = getenv("QL_NODES");
  if (argc != 3 || !nodes) {
    fprintf(stderr, "usage: QL_NODES=redis://... %s VERSION LABEL\n", argv[0]);
    return 2;
  }
  const char *want = argv[1], *label = argv[2];
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", QUORUMLOCK_VERSION_MAJOR, QUORUMLOCK_VERSION_MINOR,
           QUORUMLOCK_VERSION_PATCH);
  check(label, "quorumlock_version() is the release version", strcmp(quorumlock_version(), want) == 0,
        quorumlock_version());
  check(label, "the header's QUORUMLOCK_VERSION_* match", strcmp(header, want) == 0, header);

  quorumlock_client *a = open_client(nodes), *b = open_client(nodes);
  check(label, "connects", a && b, "quorumlock_client_new failed");
  if (!a || !b) return 1;
  quorumlock_lock *lock = NULL, *other = NULL;
  quorumlock_error *err = NULL;
  char msg[1024] = "";
  quorumlock_result r = quorumlock_client_acquire(a, (const uint8_t *)"dist-smoke", 10, NULL, NULL, &lock, &err);
  if (err) quorumlock_error_message(err, msg, sizeof msg, NULL);
  check(label, "acquires", r == QL_OK, msg);
  quorumlock_error_free(err);
  err = NULL;
  r = quorumlock_client_try_acquire(b, (const uint8_t *)"dist-smoke", 10, NULL, &other, &err);
  if (err) quorumlock_error_message(err, msg, sizeof msg, NULL);
  check(label, "a second client gets QL_BUSY", r == QL_BUSY, msg);
  quorumlock_error_free(err);
  err = NULL;
  bool held = false;
  r = quorumlock_lock_release(lock, &held, &err);
  check(label, "releases (held by a quorum)", r == QL_OK && held, quorumlock_result_name(r));
  quorumlock_error_free(err);
  quorumlock_lock_free(lock);
  quorumlock_lock_free(other);
  quorumlock_client_free(a);
  quorumlock_client_free(b);
  printf("%s: %d passed, %d failed\n", label, passed, failed);
  return failed ? 1 : 0;
}
