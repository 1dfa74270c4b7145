#pragma once
// A PS shard that is a `--role=ps-shard` process: sharded_ps drives it as
// any shard, and every call becomes one request frame and its answer over
// the bulk channel (schema/shard_codec.hpp), never BASP. The products that
// stay whole (attention) are computed here, on the coordinator's local
// GEMM, while the shard works. A shard process that goes away, refuses or
// answers out of turn fails the call with the reason.

#include <memory>
#include <string>

#include "actors/ps/shards/ps_shard.hpp"
#include "actors/transport/frame_client.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "schema/shard_codec.hpp"
#include "schema/shard_gathered.hpp"

namespace cleave {

struct remote_shard_traffic {
  uint64_t bytes_sent = 0;      // frames to the shard, headers included
  uint64_t bytes_received = 0;  // frames from it
};

class remote_shard final : public ps_shard {
 public:
  // Connects to the shard process at address ("host:port"), under TLS when
  // `tls` (a client context: the shard must show a certificate of the job's
  // CA for that host, and takes ours only if it could serve); the connect
  // gives up after connect_timeout, a call after call_timeout.
  static caf::expected<std::unique_ptr<remote_shard>> connect(caf::actor_system& sys, const std::string& host,
                                                              uint16_t port, caf::timespan connect_timeout,
                                                              caf::timespan call_timeout,
                                                              std::shared_ptr<const transport::tls_context> tls);

  caf::error attach(const std::vector<parameter*>& params, const std::vector<shard_slice>& mine) override;
  caf::error zero_grads() override;
  caf::error run(const std::vector<slice_product>& products,
                 const std::vector<gemm_job<float>>& whole) override;
  caf::expected<double> add_grads(const std::vector<parameter*>& params) override;
  caf::error update(const adamw_config& cfg, int64_t t, double grad_scale) override;
  // The values came with the update's answer, straight into the parameters.
  void gather_values(const std::vector<parameter*>&) override {}
  caf::error gather_moments(const std::vector<parameter*>& params) override;
  uint64_t bytes() const override { return bytes_; }
  // The coordinator computes the products that stay whole itself.
  bool computes_here(gemm_tag, int64_t, int64_t, int64_t) override { return true; }

  // Tells the shard process the job is over, so that it exits (0) when this
  // connection closes instead of waiting for a coordinator to come back.
  caf::error finish();
  // Whether the connection to the shard process is gone (it died or closed it).
  bool lost() const { return client_->closed(); }
  // A new connection to the same address, for a shard process started
  // again there; the next call must be an attach. The traffic counts go on.
  caf::error reconnect(caf::timespan connect_timeout);

  remote_shard_traffic traffic() const {
    return {before_client_.bytes_sent + client_->bytes_sent(), before_client_.bytes_received + client_->bytes_received()};
  }
  // The traffic once the last attach was answered (what the slices cost to place).
  remote_shard_traffic traffic_after_attach() const { return after_attach_; }
  // The shard process's own counts and peak memory.
  caf::expected<shard_stats> stats();

  // Its own checkpoints (actors/ps/shards/shard_checkpoints.hpp): whether it has a
  // --checkpoint-dir; write its slices as `h` says; load the file `file`
  // of `h`, whose slices must be cut as `mine`. After a restore the next
  // attach with the same cut sends nothing: the shard holds the slices.
  caf::error has_checkpoint_dir();
  caf::expected<shard_file_ref> checkpoint(const shard_checkpoint_request& q);
  caf::error restore(const shard_checkpoint_header& h, const shard_file_ref& file,
                     const std::vector<parameter*>& params, const std::vector<shard_slice>& mine);
  // Forgets a restore (the set it came from was not taken after all).
  void drop_restore() { restored_ = false; }
  const std::string& address() const { return address_; }
  const std::string& host() const { return host_; }
  // A request this class has no call for (a fleet's, actors/ps/shards/shard_fleet.cpp).
  caf::expected<transport::bulk_frame> request(shard_kind kind, std::vector<char> payload, shard_kind answer) {
    return call(kind, std::move(payload), answer);
  }

 private:
  remote_shard(caf::actor_system& sys, std::unique_ptr<transport::frame_client> client, std::string host,
               uint16_t port, caf::timespan call_timeout, std::shared_ptr<const transport::tls_context> tls)
      : sys_(sys), client_(std::move(client)), host_(std::move(host)), port_(port),
        address_(host_ + ":" + std::to_string(port)), call_timeout_(call_timeout), tls_(std::move(tls)) {}
  static caf::expected<std::unique_ptr<transport::frame_client>> open(caf::actor_system& sys, const std::string& host,
                                                                      uint16_t port, caf::timespan connect_timeout,
                                                                      std::shared_ptr<const transport::tls_context> tls);
  // One request and its answer, which must be of kind `expected`; either
  // may travel in parts (schema/shard_parts.hpp).
  caf::expected<transport::bulk_frame> call(shard_kind kind, std::vector<char> payload, shard_kind expected);
  // One frame each way.
  caf::expected<transport::bulk_frame> exchange(shard_kind kind, std::vector<char> payload);
  // The request in parts; the answer to its last part.
  caf::expected<transport::bulk_frame> send_in_parts(shard_kind kind, const std::vector<char>& payload);
  // The whole answer whose first part is `first`.
  caf::expected<transport::bulk_frame> fetch_parts(transport::bulk_frame first);
  // A request the coordinator holds as pieces (schema/shard_gathered.hpp),
  // sent in parts cut from them as it goes: never a copy of the whole.
  caf::expected<transport::bulk_frame> call_gathered(shard_kind kind, const gathered_message& request,
                                                     shard_kind expected);
  // The whole answer to a request, which must be of kind `expected`.
  caf::expected<transport::bulk_frame> answer(caf::expected<transport::bulk_frame> frame, shard_kind expected);
  // An answer of tensors, `first` its first frame, read into `sink` part by part.
  caf::error receive_tensors(transport::bulk_frame first, shard_tensors_sink& sink);
  // An answer of tensors whose shapes must be `shapes`' (rows, cols).
  caf::expected<std::vector<tensor>> call_for_tensors(shard_kind kind, std::vector<char> payload,
                                                      const std::vector<std::pair<int64_t, int64_t>>& shapes);

  caf::actor_system& sys_;
  std::unique_ptr<transport::frame_client> client_;
  remote_shard_traffic before_client_;  // the traffic of the connections before client_
  std::string host_;
  uint16_t port_;
  std::string address_;
  caf::timespan call_timeout_;
  std::shared_ptr<const transport::tls_context> tls_;  // null: plaintext
  uint64_t tag_ = 0;
  std::vector<shard_slice> mine_;
  std::vector<std::pair<int64_t, int64_t>> slice_shapes_;  // by parameter id
  std::vector<parameter*> params_;  // the last cut's: an update's values go straight into them
  uint64_t bytes_ = 0;
  remote_shard_traffic after_attach_;
  bool restored_ = false;  // the shard holds mine_'s slices from its own file
  // mine_, slice_shapes_ and bytes_ for these params and this cut.
  void take_cut(const std::vector<parameter*>& params, const std::vector<shard_slice>& mine);
};

}  // namespace cleave
