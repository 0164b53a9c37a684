/* TLS through the C ABI (docs/SECURITY.md): QL_NODES are mutual-TLS nodes whose URLs name
 * the CA and the client certificate; argv[1] is a node URL whose CA did not sign the node's
 * certificate, argv[2] the node's address. */
#include "common.h"

/* Connecting to `url` alone with require_quorum: the result and its error. */
static quorumlock_result connect_one(const char *url, quorumlock_error **err) {
  quorumlock_config *cfg = NULL;
  CHECK(quorumlock_config_new(&cfg) == QL_OK);
  CHECK(quorumlock_config_add_node(cfg, RES(url), NULL) == QL_OK);
  CHECK(quorumlock_config_set_require_quorum(cfg, true) == QL_OK);
  CHECK(quorumlock_config_set_connect_timeout_ms(cfg, 10000) == QL_OK);
  quorumlock_client *client = NULL;
  quorumlock_result r = quorumlock_client_new(cfg, &client, err);
  quorumlock_config_free(cfg);
  if (r == QL_OK) quorumlock_client_free(client);
  return r;
}

int main(int argc, char **argv) {
  CHECK(argc == 3);
  quorumlock_client *c = connect_nodes(true);
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *lock = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:tls"), o, NULL, &lock, NULL));
  bool held = false;
  EXPECT(QL_OK, quorumlock_lock_release(lock, &held, NULL));
  CHECK(held);
  quorumlock_lock_free(lock);
  quorumlock_lock_options_free(o);
  quorumlock_client_free(c);

  /* A wrong CA: QL_CONNECTION, the node's kind QL_NODE_TLS, the message names node and cause. */
  quorumlock_error *err = NULL;
  EXPECT(QL_CONNECTION, connect_one(argv[1], &err));
  CHECK(quorumlock_error_code(err) == QL_CONNECTION);
  CHECK(quorumlock_error_node_count(err) == 1);
  uint32_t kind = 0;
  EXPECT(QL_OK, quorumlock_error_node_kind(err, 0, &kind));
  CHECK(kind == QL_NODE_TLS);
  char msg[1024];
  size_t n = 0;
  EXPECT(QL_OK, quorumlock_error_message(err, msg, sizeof msg, &n));
  CHECK(strstr(msg, argv[2]) != NULL && strstr(msg, "UnknownIssuer") != NULL);
  quorumlock_error_free(err);

  /* No insecure mode. */
  err = NULL;
  EXPECT(QL_INVALID, connect_one("rediss://127.0.0.1:1/#insecure", &err));
  EXPECT(QL_OK, quorumlock_error_message(err, msg, sizeof msg, &n));
  CHECK(strstr(msg, "#insecure") != NULL);
  quorumlock_error_free(err);
  puts("tls ok");
  return 0;
}
