#pragma once
// Role wiring: which actors this process runs and how they find each other.

#include "cmd/options.hpp"

namespace cleave {

// --role=all: every role in this process; --devices=0 is the single-process
// reference, N > 0 an emulated fleet of N devices.
int run_all(cleave_config& cfg, const train_options& opts, int threads);

// --role=ps: the coordinator shard with the planner and detector; devices
// connect to --listen.
int run_ps(cleave_config& cfg, const train_options& opts, int threads);

// --role=ps with --shards: the coordinator of --role=ps-shard processes
// (see run_ps_shard); with --listen it also welcomes devices and sends them
// to the shards' own edges (actors/ps/shards/shard_fleet.hpp).
int run_ps_coordinator(cleave_config& cfg, const train_options& opts, int threads);

// --role=ps-shard: one PS shard as its own process, serving the coordinator
// that connects to --listen (and, with --edge, the devices it welcomed);
// exits 0 when that coordinator ends the job, and waits for another one
// (--coordinator-timeout) when it vanishes without ending it.
int run_ps_shard(cleave_config& cfg);

// --role=planner / --role=detector: that service alone, published on
// --listen, until the process is stopped (SIGINT or SIGTERM).
int run_service(cleave_config& cfg);

// --role=device: one device that joins the ps at --connect.
int run_device(cleave_config& cfg, int threads);

// --role=relay: a relay between the ps at --connect and the devices that
// join its --listen edge (actors/relay), until SIGINT or SIGTERM.
int run_relay(cleave_config& cfg);

// --role=status: the admin console at --connect as a terminal table, once
// or (--watch) every second until SIGINT or SIGTERM.
int run_status(const cleave_config& cfg);

// --role=simulate: training steps of --model on a fleet in virtual time, for
// --system (cleave or a baseline); the report (--report) has "simulated": true.
int run_simulate(const cleave_config& cfg, const train_options& opts);

// --role=plan: the predicted step of --model on --fleet (every product's
// plan and the step's parts), printed and, with --report, written as JSON.
int run_plan(const cleave_config& cfg, const train_options& opts);

// One line on stderr; exit code 2 for usage, 1 for run-time failures.
int usage_error(const std::string& reason);
int runtime_error(const std::string& reason);

}  // namespace cleave
