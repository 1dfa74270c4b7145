#include "cmd/options.hpp"

#include <sstream>

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include "actors/churn/demo_scenario.hpp"
#include "actors/detector/detector_protocol.hpp"
#include "actors/gateway/edge_gateway_protocol.hpp"
#include "actors/planner/planner_protocol.hpp"
#include "actors/transport/bulk_channel.hpp"
#include "schema/errors.hpp"
#include "schema/messages.hpp"

namespace cleave {

cleave_config::cleave_config() {
  opt_group{custom_options_, "global"}
    .add(role, "role", "what this process runs: all = every role in one process; plan = predict a step on --fleet; simulate = training steps in virtual time")
    .add(devices, "devices", "emulated devices for --role=all (0: every GEMM runs locally)")
    .add(model, "model", "mlp, gpt or xc (default mlp; --role=all with no --model, --devices, --fleet or --profile runs the gpt demo)")
    .add(scenario, "scenario", "the demo's scripted churn and lies: demo (default) or none")
    .add(gpt_shape, "shape", "gpt shape: small (d=256, 4 layers), opt-125m ... opt-30b")
    .add(hidden, "hidden", "mlp hidden widths, comma-separated (default 512,256); xc: one width (default 128)")
    .add(context, "context", "gpt context length in tokens (default 128)")
    .add(vocab, "vocab", "gpt vocabulary (default 256: bytes; OPT uses 50272)")
    .add(dataset, "dataset", "fashion-mnist (mlp default), fortunes (gpt default), or for xc gcide-nextword (default), spell-670k or xc:DIR")
    .add(data_dir, "data-dir", "dataset directory (default: the Debian package's path)")
    .add(epochs, "epochs", "passes over the training set (mlp 5, gpt 1)")
    .add(steps, "steps", "stop after this many steps; overrides --epochs")
    .add(batch, "batch", "samples (images, sequences or xc samples) per step (mlp 64, gpt 16, xc 128)")
    .add(lr, "lr", "peak AdamW learning rate (mlp and xc 1e-3, gpt 2e-3)")
    .add(weight_decay, "weight-decay", "AdamW decoupled weight decay (default 0.01)")
    .add(clip, "clip", "global gradient-norm clip, 0 disables (default 1.0)")
    .add(warmup, "warmup", "linear warm-up steps before cosine decay (mlp and xc 0, gpt 100)")
    .add(seed, "seed", "seed for initialisation and data order (default 1)")
    .add(threads, "threads", "compute threads (default: every core)")
    .add(eval_tokens, "eval-tokens", "gpt: validation tokens scored at the end (default 131072)")
    .add(eval_samples, "eval-samples", "xc: test samples scored at the end, every output neuron (default 10000)")
    .add(dense, "dense", "xc: dense full softmax over every output neuron instead of sparse mode's LSH-sampled one")
    .add(lsh, "lsh", "xc: hash family, dwta (default) or simhash")
    .add(lsh_k, "lsh-k", "xc: hashes per table, K (default 6)")
    .add(lsh_l, "lsh-l", "xc: hash tables, L (default 50)")
    .add(bucket_size, "bucket-size", "xc: neuron ids a bucket holds (default 128)")
    .add(bucket_policy, "bucket-policy", "xc: a full bucket's replacement, fifo (default) or reservoir")
    .add(min_active, "min-active", "xc: active neurons per sample at least, topped up at random (default: 0.5% of the labels)")
    .add(rehash_every, "rehash-every", "xc: steps between rehashes of the output neurons' weights, 0: never (default 50)")
    .add(rebuild_every, "rebuild-every", "xc: steps between new hash functions, 0: never (default 1000)")
    .add(modellet_copy_every, "modellet-copy-every",
         "xc on --devices: steps between the PS's copies of the model-lets, what a lost device costs at most (default 50)")
    .add(xc_baseline, "xc-baseline",
         "xc with --devices or --fleet: data-parallel = the dense full softmax replicated on every device, "
         "1/N of the batch each, gradients summed by a ring over the devices' links (emulated in this process)")
    .add(report, "report", "write a JSON summary of the run to this file")
    .add(checkpoint_dir, "checkpoint-dir", "directory for atomic checkpoints")
    .add(checkpoint_every, "checkpoint-every", "checkpoint every N steps (and at the end)")
    .add(resume, "resume", "continue from the newest valid checkpoint in --checkpoint-dir")
    .add(on_checkpoint_error, "on-checkpoint-error",
         "a checkpoint that cannot be written (a full disk): stop (default: end the run, exit 1; --resume takes "
         "the last good one) or continue (log it, train on, try the next; a failed final checkpoint still exits 1)")
    .add(log_level, "log-level", "trace, debug, info, warn, error or off (default info)")
    .add(progress_seconds, "progress-seconds", "seconds between progress lines (default 5)")
    .add(fleet, "fleet", "JSON fleet file for the in-process devices (see docs/RUNTIME.md); --role=device: a file of one device, its profile")
    .add(profile, "profile", "device preset: phone, edge, laptop, vm or fast")
    .add(ps_shards, "ps-shards", "parameter-server shards, each with its own thread and engine")
    .add(listen, "listen", "--role=ps and relay: [host:]port of the device edge (framed; devices join here); --role=planner or detector: [host:]port for the ps (BASP, server side only)")
    .add(admin, "admin", "--role=all or ps: [host:]port of the admin console (HTTP; host 127.0.0.1 unless given)")
    .add(admin_token, "admin-token", "the admin console's controls (drain, pause, resume, checkpoint) need this bearer token; @FILE reads it from FILE; unset: controls are off")
    .add(connect, "connect", "--role=device: host:port of the ps's device edge, or a relay's, or several, comma-separated, tried in turn; --role=relay: the ps's device edge; --role=status: host:port of an --admin console")
    .add(watch, "watch", "--role=status: redraw the table every second until interrupted")
    .add(planner, "planner", "--role=ps: host:port of a separate --role=planner process")
    .add(shards, "shards", "--role=ps: host:port,... of --role=ps-shard processes that own the parameters' slices and compute their products (on devices with --listen and shards started with --edge)")
    .add(edge, "edge", "--role=ps-shard: [host:]port of the shard's own device edge: devices its coordinator welcomed (--role=ps --shards --listen) take its tiles there")
    .add(shard_wait_seconds, "shard-wait-seconds", "--shards: a shard process lost mid-run is waited for this long (default 120) to listen again at its address; the run then rolls back to the newest checkpoint")
    .add(coordinator_timeout, "coordinator-timeout", "--role=ps-shard: a coordinator whose connection closes without ending the job is waited for this long (default 300 s; 0: not at all), the shard's slices kept, then the shard exits 1")
    .add(detector, "detector", "--role=planner: host:port of a separate --role=detector process")
    .add(tls_cert, "tls-cert", "this node's certificate (PEM, from deploy/ca.sh): TLS on the device edge and mutual TLS between servers")
    .add(tls_key, "tls-key", "the private key of --tls-cert")
    .add(tls_ca, "tls-ca", "the job's CA certificate: peers must be signed by it")
    .add(tls_crl, "tls-crl", "--role=ps: the CA's revocation list; revoked devices are refused at the handshake")
    .add(tls_ca_key, "tls-ca-key", "--role=ps with --join-tokens: the CA's private key, to sign devices' certificates")
    .add(join_tokens, "join-tokens", "--role=ps: file of one-time tokens a device without a certificate may trade for one")
    .add(join_token, "join-token", "--role=device: a one-time token to trade for a certificate, written to --tls-cert (with its key at --tls-key)")
    .add(device_name, "device-name", "--role=device: the name in the certificate a join token buys (default: device-HOSTNAME)")
    .add(min_devices, "min-devices", "devices to wait for before the first step")
    .add(tile_timeout, "tile-timeout", "slack: a GEMM that ran 4x its predicted time and then heard nothing this long has its tiles computed on the PS (default 30)")
    .add(ps_flops, "ps-flops", "the PS's own GEMM rate in FLOP/s, for the cost model (default 5e10)")
    .add(ps_tile_seconds, "ps-tile-seconds", "the PS's own seconds per tile it sends (the task, taking, checking and folding the result), for the cost model: a finer grid must save more than its extra tiles cost (default 3e-5)")
    .add(ps_egress, "ps-egress", "bytes/s the PS can send to the fleet (default 1.25e9; --role=plan: each shard's own link)")
    .add(pipelined_devices, "pipelined-devices", "--role=plan, simulate, ps and planner: plan for device processes, whose transfers overlap other tiles' compute, and (ps) send each device at most the tasks its memory holds at once, the rest as its results come back (default: emulated devices, one tile after another, every task sent at once)")
    .add(ps_memory_bandwidth, "ps-memory-bandwidth", "--role=plan and simulate: the PS's memory bandwidth in bytes/s, for its row-wise ops and optimizer (default 2e10)")
    .add(max_tiles_per_device, "max-tiles-per-device", "planner: most tiles of one GEMM per device (default 4)")
    .add(heartbeat, "heartbeat", "seconds between device heartbeats (default 0.1; longer past --heartbeat-rate)")
    .add(max_devices, "max-devices", "--role=ps and ps-shard: connections the device edge holds at once, devices, relays and peers not yet joined, and the devices it admits, those behind relays counted too (default 256); more are refused; --role=relay: connections its own edge holds")
    .add(heartbeat_rate, "heartbeat-rate", "heartbeats/s the ps takes from a full edge: the interval is max(--heartbeat, --max-devices / this), at most 5 s (default 2560: 0.1 s up to 256 devices; 0: always --heartbeat)")
    .add(churn, "churn", "--role=all or simulate: churn schedule file (JSON, see docs/FAILURES.md)")
    .add(churn_rate, "churn-rate", "--role=all: random churn events per step; --role=simulate: per device-hour; drawn from --seed")
    .add(byzantine, "byzantine", "--role=all with a fleet: file naming emulated devices that corrupt results (JSON, see docs/FAILURES.md; tests only)")
    .add(lie, "lie", "--role=device: corrupt results on purpose, KIND:RATE[:SIZE],... (tests only)")
    .add(speculate, "speculate", "copy a GEMM's unfinished tiles to idle devices past this x its predicted time (default 3, 0: off)")
    .add(replicate, "replicate", "fraction of tiles also computed by a second device and compared element by element (default 0)")
    .add(trust_results, "trust-results", "take device results without Freivalds' test (shape and NaN are still checked)")
    .add(quarantine_after, "quarantine-after", "refused results (failed checks) before a device is quarantined (default 3)")
    .add(suspect_phi, "suspect-phi", "detector: phi at which a device is suspected (default 3)")
    .add(dead_phi, "dead-phi", "detector: phi at which a device is declared dead (default 8)")
    .add(failure_policy, "failure-policy", "continue (default): a lost device costs its tiles; restart: stop the run for --resume, as the baselines do")
    .add(reconnect_seconds, "reconnect-seconds", "--role=device: when the ps vanishes without ending the run, keep trying to reach it this long, then exit 1 (default 60)")
    .add(stay, "stay", "--role=device: when a run ends (or its ps vanishes), wait for the next one instead of exiting")
    .add(system, "system", "--role=simulate: cleave (default), asteroid, megatron or dp")
    .add(fleet_preset, "fleet-preset", "--role=simulate: phone, edge, laptop, vm or mix: --devices drawn around the preset with --seed")
    .add(ps_ingress, "ps-ingress", "bytes/s each PS shard receives from the fleet (default: as --ps-egress)")
    .add(unpaced_devices, "unpaced-devices", "--role=all: emulated devices answer as soon as they have computed instead of after their profile's predicted time; the plans and the trajectory stay the same (a fast reference for a run of device processes)")
    .add(pace_ps_link, "pace-ps-link", "--role=all and ps: each PS shard sends and receives at --ps-egress and --ps-ingress, as if on a host of its own (default: as fast as the process can)")
    .add(sim_ps_flops, "sim-ps-flops", "--role=simulate: the FLOP/s the PS computes at, where the planner is told --ps-flops (default: the same)")
    .add(sim_ps_ops.op_seconds, "ps-op-seconds", "--role=simulate: the fixed part of each of the PS's own ops on a tile (its task, keying or copying a block, the check's passes, a fold), in seconds (default 1.3e-6; every default here measured by bench/ps_ops on the development host)")
    .add(sim_ps_ops.hash_rate, "ps-hash-rate", "--role=simulate: bytes/s the PS keys an operand block it does not send at (default 6.1e9)")
    .add(sim_ps_ops.copy_rate, "ps-copy-rate", "--role=simulate: bytes/s the PS keys and copies into a snapshot an operand block it sends (default 5.8e9)")
    .add(sim_ps_ops.prepare_rate, "ps-prepare-rate", "--role=simulate: bytes/s of the check's part over the operands, op(B)·r and op(A)·y, done while devices work (default 3.2e9)")
    .add(sim_ps_ops.check_rate, "ps-check-rate", "--role=simulate: bytes/s of the check's pass over each result as it comes (default 4.9e9)")
    .add(sim_ps_ops.fold_rate, "ps-fold-rate", "--role=simulate: bytes/s the PS adds a K-split partial result into C at (default 5.6e9)")
    .add(ps_op_threads, "ps-op-threads", "the threads the PS shares each pass over a block of 1 MiB or more among (keying, copying, the checks, folds); give a PS with cores of its own more than 1. --role=simulate prices such a pass at the rates above times this, up to --ps-memory-bandwidth (default 1)")
    .add(sim_ps_link, "sim-ps-link", "--role=simulate: bytes/s each way of each PS shard's link, where the planner is told --ps-egress/--ps-ingress (default: the same)")
    .add(wire, "wire", "fp32, bf16 or bf16-operands: the floats of tiles' operands and results on the wire (bf16-operands: operands "
                    "bf16, results fp32, for fp32's check resolution; default fp32; --role=simulate: bf16 for the opt-* shapes)")
    .add(attention_tiles, "attention-tiles", "--role=simulate: gpt's attention as fused tiles the planner may place on devices (default: per-head products on the PS, as live runs)")
    .add(relays, "relays", "--role=plan and simulate: a relay tier of this many relays between the PS and the devices, the devices spread over them in runs (default 0: none, or the fleet file's \"relays\")")
    .add(relay_link, "relay-link", "--role=relay (what it declares), and plan and simulate with --relays: bytes/s each way between the PS and each relay (default 1.25e9)")
    .add(relay_fanout, "relay-fanout", "--role=relay (what it declares), and plan and simulate with --relays: bytes/s each way between a relay and all its devices (default 1.25e10)")
    .add(relay_memory, "relay-memory", "--role=relay, and plan and simulate with --relays: bytes of each relay's operand store, least recently used out (default 6.4e10)")
    .add(relay_name, "relay-name", "--role=relay: its name for the ps, unique in the job (default HOST:PORT)")
    .add(relay_join_tokens, "relay-join-tokens", "--role=relay with TLS: admit devices without a certificate whose join carries a one-time join token, which the ps (--join-tokens) trades for a certificate")
    .add(relay_latency, "relay-latency", "--role=plan and simulate with --relays: seconds one way between the PS and a relay (default 0.005)")
    .add(ps_link_model, "ps-link-model", "--role=simulate: fair (the PS link shared by every transfer in flight, default) or scheduled (the PS sends in order, each at its device's downlink)")
    .add(recovery, "recovery", "--role=simulate --system=asteroid: replay (pipeline replay, default) or restart (from the last checkpoint)");
  add_cleave_message_types(*this);
  add_planner_message_types(*this);
  add_detector_message_types(*this);
  add_gateway_message_types(*this);
  transport::add_transport_message_types(*this);
  load<caf::io::middleman>();
  load<caf::openssl::manager>();  // used only with --tls-*: caf::openssl::publish and remote_actor
}

namespace {

caf::expected<std::vector<int64_t>> parse_widths(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0)
      return fail("--hidden: '" + item + "' is not a positive integer (expected e.g. 256,128)");
    out.push_back(v);
  }
  return out;
}

// Sparse mode's flags, checked; their defaults are xc_settings' (SLIDE's).
caf::expected<xc_settings> to_xc_settings(const cleave_config& c) {
  xc_settings xc;
  xc.sparse = !c.dense;
  if (c.lsh == "simhash") xc.lsh.family = lsh_family::simhash;
  else if (!c.lsh.empty() && c.lsh != "dwta")
    return fail("--lsh must be dwta or simhash, got '" + c.lsh + "'");
  if (c.bucket_policy == "reservoir") xc.policy = bucket_policy::reservoir;
  else if (!c.bucket_policy.empty() && c.bucket_policy != "fifo")
    return fail("--bucket-policy must be fifo or reservoir, got '" + c.bucket_policy + "'");
  struct count_flag {
    const char* name;
    int value, not_given, least;
  };
  for (const auto& f : {count_flag{"lsh-k", c.lsh_k, 0, 1}, {"lsh-l", c.lsh_l, 0, 1},
                        {"bucket-size", c.bucket_size, 0, 1}, {"min-active", c.min_active, -1, 1},
                        {"rehash-every", c.rehash_every, -1, 0},
                        {"rebuild-every", c.rebuild_every, -1, 0},
                        {"eval-samples", c.eval_samples, 0, 1},
                        {"modellet-copy-every", c.modellet_copy_every, -1, 0}})
    if (f.value != f.not_given && f.value < f.least)
      return fail(std::string{"--"} + f.name + " must be at least " + std::to_string(f.least)
                  + ", got " + std::to_string(f.value));
  if (c.lsh_k != 0) xc.lsh.hashes = c.lsh_k;
  if (c.lsh_l != 0) xc.lsh.tables = c.lsh_l;
  if (c.bucket_size != 0) xc.bucket_size = c.bucket_size;
  if (c.min_active != -1) xc.min_active = c.min_active;
  if (c.rehash_every != -1) xc.schedule.rehash_every = c.rehash_every;
  if (c.rebuild_every != -1) xc.schedule.rebuild_every = c.rebuild_every;
  return xc;
}

// The sparse-mode flags mean nothing to the dense models.
caf::error refuse_xc_flags(const cleave_config& c) {
  const std::pair<const char*, bool> given[] = {
    {"dense", c.dense}, {"lsh", !c.lsh.empty()}, {"lsh-k", c.lsh_k != 0},
    {"lsh-l", c.lsh_l != 0}, {"bucket-size", c.bucket_size != 0},
    {"bucket-policy", !c.bucket_policy.empty()}, {"min-active", c.min_active != -1},
    {"rehash-every", c.rehash_every != -1}, {"rebuild-every", c.rebuild_every != -1},
    {"eval-samples", c.eval_samples != 0}, {"modellet-copy-every", c.modellet_copy_every != -1},
    {"xc-baseline", !c.xc_baseline.empty()}};
  for (const auto& [flag, set] : given)
    if (set) return fail(std::string{"--"} + flag + " belongs to --model=xc");
  return caf::none;
}

// --xc-baseline=data-parallel: replicas on the in-process fleet's links.
caf::error check_data_parallel(const cleave_config& c) {
  if (c.xc_baseline != "data-parallel")
    return fail("--xc-baseline must be data-parallel, got '" + c.xc_baseline + "'");
  if (c.role != "all")
    return fail("--xc-baseline=data-parallel emulates its devices' links in one process: use --role=all");
  if (c.devices == 0 && c.fleet.empty())
    return fail("--xc-baseline=data-parallel needs --devices=N or --fleet: its ring runs over their links");
  const std::pair<const char*, bool> refused[] = {
    {"churn", !c.churn.empty()}, {"churn-rate", c.churn_rate != 0}, {"byzantine", !c.byzantine.empty()},
    {"admin", !c.admin.empty()}, {"modellet-copy-every", c.modellet_copy_every != -1},
    {"pace-ps-link", c.pace_ps_link}};
  for (const auto& [flag, set] : refused)
    if (set)
      return fail(std::string{"--"} + flag + " does not apply to --xc-baseline=data-parallel (its devices are "
                  "only links: no actors to churn or watch, no model-lets, no PS)");
  return caf::none;
}

}  // namespace

caf::error resolve_defaults(cleave_config& c) {
  c.demo = c.role == "all" && c.model.empty() && c.devices == cleave_config::devices_not_given
           && c.fleet.empty() && c.profile.empty() && c.hidden.empty() && c.gpt_shape.empty()
           && c.dataset.empty();
  if (!c.scenario.empty()) {
    if (!c.demo)
      return fail("--scenario belongs to the embedded demo: --role=all without --model, --devices, "
                  "--fleet, --profile, --hidden, --shape or --dataset");
    if (c.scenario != "demo" && c.scenario != "none")
      return fail("--scenario must be demo or none, got '" + c.scenario + "'");
  }
  if (c.demo) {
    c.model = "gpt";
    c.devices = demo_devices;
    if (c.steps == 0 && c.epochs < 0) c.steps = static_cast<int>(demo_steps);
    // The demo's PS and devices share this process: the PS's link is memory.
    if (c.ps_egress == cleave_config::default_ps_egress) c.ps_egress = 1e10;
    if (c.admin.empty()) c.admin = demo_console;
    // Scripted churn or lies from the flags replace the demo's own.
    if (c.scenario.empty())
      c.scenario = c.churn.empty() && c.churn_rate == 0 && c.byzantine.empty() ? "demo" : "none";
  }
  if (c.model.empty()) c.model = "mlp";
  if (c.hidden.empty()) c.hidden = c.model == "xc" ? "128" : "512,256";
  if (c.gpt_shape.empty()) c.gpt_shape = "small";
  if (c.devices == cleave_config::devices_not_given) c.devices = 0;
  return caf::none;
}

caf::expected<train_options> to_train_options(const cleave_config& c) {
  train_options o;
  auto positive = [](const char* flag, long long v) -> caf::error {
    if (v <= 0) return fail(std::string{"--"} + flag + " must be positive, got " + std::to_string(v));
    return caf::none;
  };
  auto non_negative = [](const char* flag, double v) -> caf::error {
    if (!(v >= 0)) return fail(std::string{"--"} + flag + " must be >= 0, got " + std::to_string(v));
    return caf::none;
  };
  if (c.model == "mlp") {
    o.model.kind = "mlp";
    o.model.inputs = 28 * 28;
    o.model.classes = 10;
    auto widths = parse_widths(c.hidden);
    if (!widths) return widths.error();
    o.model.hidden = *widths;
  } else if (c.model == "gpt") {
    if (auto e = positive("context", c.context)) return e;
    if (auto e = positive("vocab", c.vocab)) return e;
    auto shape = gpt_preset(c.gpt_shape, c.vocab, c.context);
    if (!shape) return shape.error();
    o.model = *shape;
  } else if (c.model == "xc") {
    o.model.kind = "xc";
    auto widths = parse_widths(c.hidden);
    if (!widths) return widths.error();
    if (widths->size() != 1)
      return fail("--hidden: xc has one hidden layer, got '" + c.hidden + "'");
    o.model.hidden = *widths;
    auto xc = to_xc_settings(c);
    if (!xc) return xc.error();
    o.xc = *xc;
  } else {
    return fail("--model: unknown model '" + c.model + "' (expected mlp, gpt or xc)");
  }
  if (o.model.kind != "xc")
    if (auto e = refuse_xc_flags(c)) return e;
  const bool lm = o.model.kind == "gpt";
  const bool xc = o.model.kind == "xc";
  o.dataset = !c.dataset.empty() ? c.dataset
              : xc               ? "gcide-nextword"
              : lm               ? "fortunes"
                                 : "fashion-mnist";
  o.data_dir = c.data_dir;
  if (auto e = non_negative("steps", c.steps)) return e;
  if (c.epochs < -1) return fail("--epochs must be >= 0, got " + std::to_string(c.epochs));
  o.epochs = c.epochs >= 0 ? c.epochs : (lm ? 1 : 5);
  o.steps = c.steps;
  o.batch = c.batch != 0 ? c.batch : (lm ? 16 : xc ? 128 : 64);
  if (auto e = positive("batch", o.batch)) return e;
  o.adamw.lr = c.lr != 0 ? c.lr : (lm ? 2e-3 : 1e-3);
  if (!(o.adamw.lr > 0 && o.adamw.lr < 10)) return fail("--lr must be in (0, 10)");
  if (auto e = non_negative("weight-decay", c.weight_decay)) return e;
  if (auto e = non_negative("clip", c.clip)) return e;
  o.adamw.weight_decay = c.weight_decay;
  o.adamw.clip_norm = c.clip;
  o.warmup = c.warmup >= 0 ? c.warmup : (lm ? 100 : 0);
  if (c.seed < 0) return fail("--seed must be >= 0");
  o.seed = static_cast<uint64_t>(c.seed);
  if (auto e = positive("eval-tokens", c.eval_tokens)) return e;
  if (!(c.shard_wait_seconds >= 0) || c.shard_wait_seconds > 86400)
    return fail("--shard-wait-seconds must be between 0 and 86400");
  if (!(c.coordinator_timeout >= 0) || c.coordinator_timeout > 86400)
    return fail("--coordinator-timeout must be between 0 and 86400");
  o.eval_tokens = c.eval_tokens;
  if (c.eval_samples != 0) o.eval_samples = c.eval_samples;
  if (xc && ((c.role != "all" && c.role != "ps") || c.ps_shards != 1))
    return fail("--model=xc trains with --role=all or --role=ps and --ps-shards=1 (one PS holds "
                "the copy of the model-lets)");
  const bool data_parallel = xc && !c.xc_baseline.empty();
  if (data_parallel) {
    if (auto e = check_data_parallel(c)) return e;
    o.xc.sparse = false;  // every replica scores every output neuron
  }
  const bool on_devices = xc && !data_parallel && (c.role == "ps" || c.devices != 0 || !c.fleet.empty());
  if (on_devices && !o.xc.sparse)
    return fail("--dense is the single-process reference (--devices=0): on devices the output "
                "layer is sparse mode's model-lets");
  if (!on_devices && c.modellet_copy_every != -1)
    return fail("--modellet-copy-every belongs to --model=xc on --devices");
  if (auto e = non_negative("checkpoint-every", c.checkpoint_every)) return e;
  o.checkpoint_dir = c.checkpoint_dir;
  o.checkpoint_every = c.checkpoint_every;
  o.resume = c.resume;
  auto on_error = parse_on_checkpoint_error(c.on_checkpoint_error);
  if (!on_error) return on_error.error();
  o.checkpoint_errors = *on_error;
  if (xc && o.xc.sparse && o.checkpoint_every > 0) {
    // A checkpoint at a table refresh resumes bit for bit (xc.cpp, restored;
    // on devices each model-let rebuilds its tables when placed).
    const int64_t period = o.xc.schedule.rehash_every > 0 ? o.xc.schedule.rehash_every
                                                          : o.xc.schedule.rebuild_every;
    if (period > 0 && o.checkpoint_every % period != 0)
      return fail("--checkpoint-every (" + std::to_string(o.checkpoint_every)
                  + ") must be a multiple of --rehash-every (" + std::to_string(period)
                  + ") in sparse mode, so that a resume finds the hash tables it left");
  }
  if (!(c.progress_seconds > 0)) return fail("--progress-seconds must be positive");
  o.progress_seconds = c.progress_seconds;
  return o;
}

caf::expected<std::vector<std::pair<std::string, uint16_t>>> parse_endpoint_list(const std::string& text,
                                                                                 const std::string& flag,
                                                                                 size_t most,
                                                                                 const std::string& what) {
  std::vector<std::pair<std::string, uint16_t>> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    auto one = parse_endpoint(text.substr(at, comma - at), flag, false);
    if (!one) return one.error();
    if (one->second == 0) return fail(flag + ": '" + text.substr(at, comma - at) + "' needs a port above 0");
    out.push_back(*one);
    if (out.size() > most) return fail(flag + ": more than " + std::to_string(most) + " " + what);
    at = comma + 1;
  }
  return out;
}

caf::expected<std::vector<std::pair<std::string, uint16_t>>> parse_shard_list(const std::string& text) {
  return parse_endpoint_list(text, "--shards", static_cast<size_t>(cleave_config::max_ps_shards), "shards");
}

}  // namespace cleave
