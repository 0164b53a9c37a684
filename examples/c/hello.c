/* Locks one resource across the nodes in QL_NODES (comma-separated redis:// URLs).
 * Build: cc hello.c $(pkg-config --cflags --libs quorumlock) -o hello */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quorumlock.h>

static int fail(const char *what, quorumlock_result code, quorumlock_error *err) {
  char msg[512];
  quorumlock_error_message(err, msg, sizeof msg, NULL);
  fprintf(stderr, "%s: %s (%s)\n", what, quorumlock_result_name(code), err ? msg : "");
  quorumlock_error_free(err);
  return 1;
}

int main(void) {
  const char *nodes = getenv("QL_NODES");
  if (!nodes) {
    fprintf(stderr, "set QL_NODES=redis://host:port,...\n");
    return 2;
  }
  quorumlock_config *cfg = NULL;
  quorumlock_config_new(&cfg);
  for (const char *p = nodes; *p;) {
    size_t len = strcspn(p, ",");
    quorumlock_config_add_node(cfg, (const uint8_t *)p, len, NULL);
    p += len + (p[len] == ',');
  }
  quorumlock_client *client = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_new(cfg, &client, &err);
  quorumlock_config_free(cfg);
  if (r != QL_OK) return fail("connect", r, err);

  quorumlock_lock *lock = NULL;
  r = quorumlock_client_acquire(client, (const uint8_t *)"hello", 5, NULL, NULL, &lock, &err);
  if (r != QL_OK) return fail("acquire", r, err);
  printf("C: locked \"hello\" on %zu nodes (quorumlock %s), %llu ms left\n",
         quorumlock_client_node_count(client), quorumlock_version(),
         (unsigned long long)quorumlock_lock_remaining_ms(lock));
  bool held = false;
  r = quorumlock_lock_release(lock, &held, &err);
  if (r != QL_OK) return fail("release", r, err);
  printf("C: released (held by a quorum: %s)\n", held ? "yes" : "no");
  quorumlock_lock_free(lock);
  quorumlock_client_free(client);
  return 0;
}
