# frozen_string_literal: true

require_relative "test_helper"
require "uri"

# TLS end to end (docs/SECURITY.md): a mutual-TLS node of its own from ql-harness, the CA and
# client certificate given as node URL parameters, typed errors for a wrong CA and #insecure.
class TestTLS < Minitest::Test
  include QLTest

  def self.tls_node
    @tls_node ||= begin
      out = IO.popen([QLTest.harness, "start", "--nodes", "1", "--persist", "none", "--mtls",
                      "--parent", Process.pid.to_s], &:read)
      raise "ql-harness start --mtls failed" unless $?.success?

      info = JSON.parse(out.lines.last)
      main = Process.pid
      Minitest.after_run { system(QLTest.harness, "stop", info["run_dir"], out: File::NULL) if Process.pid == main }
      info
    end
  end

  def node_url(ca)
    info = self.class.tls_node
    t = info["tls"]
    query = URI.encode_www_form(tls_ca: ca, tls_cert: t["cert"], tls_key: t["key"])
    "#{info['nodes'][0]['url'].split('?').first}?#{query}"
  end

  def tls_client(url)
    c = Quorumlock::Client.new([url], quarantine: :off, require_quorum: true, connect_timeout: 10_000,
                                      node_timeout: 1000)
    (@clients ||= []) << c
    c
  end

  def test_locks_over_mutual_tls
    c = tls_client(node_url(self.class.tls_node["tls"]["ca"]))
    lk = c.lock(unique, 5000)
    assert lk
    assert lk.unlock
  end

  def test_a_wrong_ca_is_a_connection_error_naming_the_node
    info = self.class.tls_node
    e = assert_raises(Quorumlock::ConnectionFailed) { tls_client(node_url(info["tls"]["other_ca"])) }
    assert_equal "QL_CONNECTION", e.code
    assert_equal "Tls", e.nodes[0].kind
    assert_includes e.message, info["nodes"][0]["addr"]
    assert_includes e.message, "UnknownIssuer"
  end

  def test_insecure_is_refused
    url = "#{self.class.tls_node['nodes'][0]['url'].split('?').first}#insecure"
    e = assert_raises(Quorumlock::InvalidArgument) { tls_client(url) }
    assert_includes e.message, "#insecure"
  end
end
