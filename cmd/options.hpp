#pragma once
// Command-line and caf-application.ini options of the `cleave` binary. CAF's
// own option groups parse them, so every flag can also be set in the INI file
// ("[global]" section, same names).

#include <string>

#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>

#include "actors/detector/heartbeat_interval.hpp"
#include "actors/planner/ps_tile_work.hpp"
#include "schema/endpoint.hpp"
#include "training/trainer.hpp"

namespace cleave {

class cleave_config : public caf::actor_system_config {
 public:
  cleave_config();

  std::string role = "all";
  // Left at these, with no --fleet or --profile, --role=all runs the
  // embedded demo (see resolve_defaults).
  static constexpr int devices_not_given = -1000000;
  int devices = devices_not_given;
  std::string model;    // default: mlp, or gpt for the demo
  std::string scenario; // the demo's scenario: demo (default) or none
  bool demo = false;    // resolved: this run is the embedded demo
  std::string gpt_shape;  // default small
  std::string hidden;     // default 512,256
  int context = 128;
  int vocab = 256;
  std::string dataset;  // default follows the model
  std::string data_dir;
  int epochs = -1;       // default follows the model
  int steps = 0;
  int batch = 0;         // default follows the model
  double lr = 0;         // default follows the model
  double weight_decay = 0.01;
  double clip = 1.0;
  int warmup = -1;       // default follows the model
  int seed = 1;
  int threads = 0;       // 0: every core
  int ps_op_threads = 1;  // the PS's passes over large blocks (kernels/row_parts.hpp)
  int eval_tokens = 131072;
  // sparse mode (--model=xc); the sentinels mean "not given" (see to_train_options)
  bool dense = false;          // xc: the full softmax instead of sparse mode
  std::string lsh;             // dwta (default) or simhash
  int lsh_k = 0;
  int lsh_l = 0;
  int bucket_size = 0;
  std::string bucket_policy;   // fifo (default) or reservoir
  int min_active = -1;
  int rehash_every = -1;
  int rebuild_every = -1;
  int eval_samples = 0;
  int modellet_copy_every = -1;  // xc on devices: steps between the PS's copies of the model-lets
  std::string xc_baseline;       // xc: data-parallel = dense replicas over the fleet's links (empty: none)
  std::string report;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  bool resume = false;
  std::string on_checkpoint_error = "stop";  // continue or stop (training/checkpoint_policy.hpp)
  std::string log_level = "info";
  // runtime
  std::string fleet;           // fleet file for the in-process devices
  std::string profile;         // device preset: the device role's profile, or the in-process fleet's
  int ps_shards = 1;
  static constexpr int max_ps_shards = 64;  // one thread each
  std::string admin;           // [host:]port of the admin console (HTTP)
  std::string admin_token;     // the console's controls: the token, or @FILE holding it
  std::string listen;          // --role=ps: the device edge; planner, detector: their BASP port
  std::string connect;         // --role=device: host:port of the ps's device edge; --role=status: of the admin console
  bool watch = false;          // --role=status: refresh every second until interrupted
  std::string planner;         // --role=ps: host:port of a separate planner process
  std::string shards;          // --role=ps: host:port,... of --role=ps-shard processes (no devices then)
  std::string edge;            // --role=ps-shard: [host:]port of its own device edge (devices the coordinator welcomed)
  double shard_wait_seconds = 120;  // --shards: how long to wait for a lost shard to listen again
  double coordinator_timeout = 300;  // --role=ps-shard: how long an orphan waits for a coordinator
  std::string detector;        // --role=planner: host:port of a separate detector process
  // TLS: this node's certificate and key and the job's CA (deploy/ca.sh),
  // all three or none; the CA's revocation list is optional (the ps checks
  // devices against it). With them the device edge runs over TLS and the
  // server-side BASP over CAF's mutual TLS.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  std::string tls_crl;
  std::string tls_ca_key;      // --role=ps: the CA's key, to sign certificates for join tokens
  std::string join_tokens;     // --role=ps: a file of one-time join tokens (deploy/ca.sh tokens)
  std::string join_token;      // --role=device: a token to trade for a certificate
  std::string device_name;     // --role=device: the name in that certificate
  bool tls() const { return !tls_cert.empty(); }
  int min_devices = -1;        // default: --devices for role all, 1 for role ps
  double tile_timeout = 30;    // seconds before a tile is given to someone else
  double ps_flops = 5e10;      // the PS's own GEMM rate, for the cost model
  double ps_tile_seconds = 3e-5;  // the PS's own work per tile, for the cost model
  static constexpr double default_ps_egress = 1.25e9;
  double ps_egress = default_ps_egress;   // bytes/s the PS can send to the fleet (--role=plan and simulate: per shard)
  bool pipelined_devices = false;     // --role=plan: devices overlap transfers with compute
  int max_tiles_per_device = 4;  // planner: tiles of one GEMM a device may get
  double heartbeat = 0.1;      // seconds between device heartbeats
  // The device edge's connection cap, and the heartbeats/s the ps affords a
  // full edge: the heartbeat interval stretches past --heartbeat to keep
  // max_devices / interval within it (actors/detector/heartbeat_interval.hpp).
  int max_devices = 256;
  static constexpr int max_max_devices = 100000;
  double heartbeat_rate = default_heartbeat_rate;
  double progress_seconds = 5;
  // churn and recovery
  std::string churn;           // --role=all: churn schedule file
  double churn_rate = 0;       // --role=all: random churn events per step (with --seed)
  // fault injection (tests of the PS's verification; never on by default)
  std::string byzantine;       // --role=all: which emulated devices lie, and how (JSON file)
  std::string lie;             // --role=device: KIND:RATE[:SIZE],... this device's lies
  double speculate = 3;        // copies of straggling tiles past this x the predicted time (0: off)
  double replicate = 0;        // fraction of tiles also computed by a second device and compared
  bool trust_results = false;  // skip Freivalds' test (a fleet one owns; measuring its cost)
  int quarantine_after = 3;    // refused results before a device gets no more tiles
  double suspect_phi = 3;      // detector: suspicion level at which a device is suspected
  double dead_phi = 8;         // detector: ... and declared dead
  double reconnect_seconds = 60;  // --role=device: how long to keep trying to reach a vanished ps
  bool stay = false;              // --role=device: wait for the next run instead of exiting
  std::string failure_policy = "continue";  // or "restart": the baselines' way, for benchmarks
  // --role=simulate
  std::string system = "cleave";    // cleave, asteroid, megatron or dp
  std::string fleet_preset;         // phone, edge, laptop, vm or mix: --devices drawn with --seed
  double ps_ingress = 0;            // bytes/s each PS shard receives (0: as --ps-egress)
  bool pace_ps_link = false;        // each PS shard holds its messages to --ps-egress/--ps-ingress
  bool unpaced_devices = false;     // --role=all: emulated devices answer as soon as they computed
  double ps_memory_bandwidth = 2e10;  // bytes/s of the PS's memory: its row-wise ops and optimizer
  // The simulated PS's FLOP/s and link (bytes/s each way per shard) where
  // they differ from what the planner is told (0: as told).
  double sim_ps_flops = 0;
  double sim_ps_link = 0;
  // The simulated PS's own work on tiles, op by op (ps_tile_work.hpp): each
  // call's fixed part and each op's bytes/s, this host's by default.
  ps_op_rates sim_ps_ops;
  std::string wire;           // fp32 or bf16 (default: bf16 for the opt-* shapes in --role=simulate, else fp32)
  std::string ps_link_model = "fair";  // --role=simulate: fair or scheduled
  bool attention_tiles = false;        // --role=simulate: gpt's attention as fused device tiles
  // --role=plan and simulate: a relay tier of this many relays, the devices
  // spread over them (0: none, or the fleet file's "relays").
  int relays = 0;
  double relay_link = 1.25e9;     // bytes/s each way between the PS and each relay
  double relay_fanout = 1.25e10;  // bytes/s each way between a relay and its devices, in all
  double relay_memory = 6.4e10;   // bytes of each relay's operand store
  double relay_latency = 0.005;   // seconds one way between the PS and a relay
  std::string relay_name;         // --role=relay: how the ps knows it (default HOST:PORT)
  bool relay_join_tokens = false;  // --role=relay with TLS: devices without a certificate may bring a join token
  std::string recovery = "replay";  // asteroid: replay (pipeline replay) or restart (from a checkpoint)
  bool vocab_given = false;         // --vocab on the command line (simulate: OPT's 50272 otherwise)
};

// Decides whether this run is the embedded demo (--role=all with none of
// --model, --devices, --fleet, --profile, --hidden, --shape or --dataset) and fills in what that implies:
// the demo's model, fleet size, steps and console; otherwise mlp and no
// devices, as without the demo. Refuses --scenario outside the demo.
caf::error resolve_defaults(cleave_config& cfg);

// Checks every value and fills in model-dependent defaults. Errors are one
// line naming the flag.
caf::expected<train_options> to_train_options(const cleave_config& cfg);


// host:port,host:port,...: every entry a host and a port above 0, at most
// `most` of them; errors name `flag`, and what the entries are.
caf::expected<std::vector<std::pair<std::string, uint16_t>>> parse_endpoint_list(const std::string& text,
                                                                                 const std::string& flag,
                                                                                 size_t most,
                                                                                 const std::string& what);

// --shards=host:port,host:port,...: at most cleave_config::max_ps_shards.
caf::expected<std::vector<std::pair<std::string, uint16_t>>> parse_shard_list(const std::string& text);

}  // namespace cleave
