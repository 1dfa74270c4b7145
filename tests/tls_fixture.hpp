#pragma once
// Certificates for TLS tests, made once per test process by deploy/ca.sh in
// a temporary directory (removed at exit):
//   ca1: the job's CA; server "ps" (SAN 127.0.0.1, localhost, ps.cluster.test),
//        devices "dev1", "dev2", "revoked" (revoked, in ca1/crl.pem) and
//        "expired" (valid only in January 2020)
//   ca2: another CA; device "intruder", server "ps2"
// CLEAVE_CA_SH is the script's path (tests/CMakeLists.txt).

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "actors/transport/tls_session.hpp"

namespace cleave::testing {

struct test_pki {
  std::string dir;
  test_pki() {
    char tmpl[] = "/tmp/cleave_pki_XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    const std::string ca = std::string("bash ") + CLEAVE_CA_SH + " ";
    for (const std::string& args :
         {"init " + dir + "/ca1", "issue " + dir + "/ca1 ps server --san ps.cluster.test",
          "issue " + dir + "/ca1 dev1", "issue " + dir + "/ca1 dev2 device --days 30",
          "issue " + dir + "/ca1 revoked", "revoke " + dir + "/ca1 revoked",
          "issue " + dir + "/ca1 expired device --start 20200101000000Z --end 20200102000000Z",
          "init " + dir + "/ca2", "issue " + dir + "/ca2 intruder", "issue " + dir + "/ca2 ps2 server"}) {
      auto cmd = ca + args + " >/dev/null";
      if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
    }
  }
  ~test_pki() {
    auto cmd = "rm -rf '" + dir + "'";
    [[maybe_unused]] int rc = std::system(cmd.c_str());
  }
  transport::tls_files files(const std::string& ca, const std::string& name) const {
    auto d = dir + "/" + ca + "/";
    return {d + name + ".pem", d + name + ".key", d + "ca.pem", d + "crl.pem"};
  }
  transport::tls_files server_files() const { return files("ca1", "ps"); }
  transport::tls_files device_files(const std::string& name) const { return files("ca1", name); }
};

}  // namespace cleave::testing
