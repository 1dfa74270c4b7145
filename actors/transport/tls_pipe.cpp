#include "actors/transport/tls_pipe.hpp"

#include <exception>
#include <utility>

#include "schema/errors.hpp"

namespace cleave::transport::detail {

struct tls_engine {
  tls_engine(std::shared_ptr<const tls_context> ctx, const std::string& host) : session(std::move(ctx), host) {}
  tls_session session;
  // The ciphertext buffer the session borrows (push()); it stays here until
  // every byte of it is read, then goes back to the owner for reuse.
  std::vector<char> current;
  std::deque<std::vector<char>> queued;  // behind `current`
  // Ciphertext the owner read while a decryption ran, which that decryption
  // picks up (one job per unit instead of one per socket read), and the
  // read buffers it finished with. Only these cross threads outside a job.
  std::mutex mu;
  std::deque<std::vector<char>> arriving;
  std::vector<std::vector<char>> spares;
};

namespace {

// Read buffers kept for reuse while a connection streams: the one CAF reads
// into next and the one a decryption just finished. trim() frees them once
// the connection is quiet, so an idle connection holds CAF's buffer only.
constexpr size_t max_spares = 2;

void keep_spare(tls_engine& e, std::vector<char>&& b) {
  if (b.capacity() == 0) return;
  std::lock_guard<std::mutex> lk(e.mu);
  if (e.spares.size() < max_spares) e.spares.push_back(std::move(b));
}

tls_result run_open(tls_engine& e, std::deque<std::vector<char>>& in, std::vector<char>& unit, size_t have,
                    size_t want) {
  tls_result r;
  for (auto& b : in) e.queued.push_back(std::move(b));
  in.clear();
  auto& s = e.session;
  while (!r.err) {
    if (s.handshake_done() && have < want) {
      auto n = s.pull(unit.data() + have, want - have);
      if (!n) {
        r.err = n.error();
        break;
      }
      have += *n;
      if (*n > 0) continue;
    }
    if (have == want && s.handshake_done()) break;
    // The session read all it was given (pull() said so, or the handshake
    // wants more): the next buffer, and the spent one back to the owner.
    if (s.ciphertext_buffered() > 0) break;
    if (e.queued.empty()) {
      std::lock_guard<std::mutex> lk(e.mu);
      for (auto& b : e.arriving) e.queued.push_back(std::move(b));
      e.arriving.clear();
    }
    if (e.queued.empty()) break;
    keep_spare(e, std::move(e.current));
    e.current = std::move(e.queued.front());
    e.queued.pop_front();
    r.err = s.push(e.current.data(), e.current.size());
  }
  // Handshake records, an alert, a key update's answer: written in order
  // before anything sealed later.
  s.drain(r.wire);
  r.unit = std::move(unit);
  r.have = have;
  r.handshake_done = s.handshake_done();
  r.buffered = s.ciphertext_buffered();
  // Read to the end: the session no longer borrows it.
  if (r.buffered == 0) keep_spare(e, std::move(e.current));
  e.current = {};
  for (auto& b : e.queued) r.buffered += b.size();
  return r;
}

tls_result run_open_borrowed(tls_engine& e, const char* data, size_t size, std::vector<char>& unit, size_t have,
                             size_t want) {
  tls_result r;
  r.err = e.session.push(data, size);
  std::deque<std::vector<char>> none;
  if (!r.err) {
    r = run_open(e, none, unit, have, want);
  } else {
    r.unit = std::move(unit);
    r.have = have;
  }
  // The caller's buffer is CAF's: nothing of it may stay borrowed.
  e.session.keep_rest();
  return r;
}

tls_result run_seal(tls_engine& e, seal_input& in, std::vector<char>& wire) {
  tls_result r;
  r.sealed = true;
  auto n = in.head.size() + body_size(in.body);
  // One growth step for the whole write: records append without reallocating.
  auto need = wire.size() + n + (n / 16384 + 2) * 32;
  if (wire.capacity() < need) wire.reserve(need);
  if (!in.head.empty()) r.err = e.session.write(in.head.data(), in.head.size(), wire);
  if (!r.err && body_size(in.body) > 0) r.err = e.session.write(body_data(in.body), body_size(in.body), wire);
  r.wire = std::move(wire);
  r.input = std::move(in);
  return r;
}

}  // namespace

const char* body_data(const payload_buffer& b) {
  return std::visit(
    [](const auto& v) -> const char* {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bulk_buffer>)
        return const_cast<bulk_buffer&>(v).storage().data();
      else
        return reinterpret_cast<const char*>(v.data());
    },
    b);
}

size_t body_size(const payload_buffer& b) {
  return std::visit(
    [](const auto& v) -> size_t {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bulk_buffer>)
        return const_cast<bulk_buffer&>(v).storage().size();
      else
        return v.size() * sizeof(v[0]);
    },
    b);
}

tls_pipe::tls_pipe(std::shared_ptr<const tls_context> ctx, const std::string& peer_host,
                   std::shared_ptr<crypto_pool> pool, std::function<void()> notify)
    : engine_(std::make_shared<tls_engine>(std::move(ctx), peer_host)),
      pool_(std::move(pool)),
      results_(std::make_shared<results>()),
      notify_(std::move(notify)) {
  if (pool_) strand_ = pool_->make_strand();
}

tls_pipe::~tls_pipe() {
  if (strand_) strand_->cancel();
}

tls_session& tls_pipe::session() { return engine_->session; }

std::optional<tls_result> tls_pipe::run(std::function<tls_result()> work, bool run_inline) {
  if (run_inline || !strand_) return work();
  auto engine = engine_;  // the job keeps the session alive if we close meanwhile
  auto res = results_;
  auto notify = notify_;
  ++outstanding_;
  bool posted = strand_->post([work = std::move(work), engine, res, notify]() mutable {
    tls_result r;
    try {
      r = work();
    } catch (const std::exception& e) {
      // Out of memory mid-record: the session is unusable, say so as a value.
      r.err = fail(std::string("TLS: ") + e.what());
    }
    work = nullptr;
    {
      std::lock_guard<std::mutex> lk(res->mu);
      res->done.push_back(std::move(r));
    }
    if (notify) notify();
  });
  if (!posted) {
    tls_result r;
    r.err = fail("TLS: crypto pool stopped");
    {
      std::lock_guard<std::mutex> lk(results_->mu);
      results_->done.push_back(std::move(r));
    }
    if (notify_) notify_();
  }
  return std::nullopt;
}

std::optional<tls_result> tls_pipe::open(std::deque<std::vector<char>>&& ciphertext, std::vector<char>&& unit,
                                         size_t have, size_t want, bool run_inline) {
  auto e = engine_.get();
  return run(
    [e, in = std::move(ciphertext), unit = std::move(unit), have, want]() mutable {
      return run_open(*e, in, unit, have, want);
    },
    run_inline);
}

tls_result tls_pipe::open_in_place(const char* data, size_t size, std::vector<char>&& unit, size_t have,
                                   size_t want) {
  return run_open_borrowed(*engine_, data, size, unit, have, want);
}

void tls_pipe::trim() {
  std::lock_guard<std::mutex> lk(engine_->mu);
  engine_->spares.clear();
  engine_->spares.shrink_to_fit();
}

std::optional<tls_result> tls_pipe::seal(seal_input&& in, std::vector<char>&& wire, bool run_inline) {
  auto e = engine_.get();
  // std::function needs a copyable callable: the buffers travel in a shared box.
  auto box = std::make_shared<std::pair<seal_input, std::vector<char>>>(std::move(in), std::move(wire));
  return run([e, box] { return run_seal(*e, box->first, box->second); }, run_inline);
}

void tls_pipe::arrived(std::vector<char>&& ciphertext) {
  std::lock_guard<std::mutex> lk(engine_->mu);
  engine_->arriving.push_back(std::move(ciphertext));
}

size_t tls_pipe::take_arrived(std::deque<std::vector<char>>& into) {
  std::lock_guard<std::mutex> lk(engine_->mu);
  size_t n = 0;
  for (auto& b : engine_->arriving) {
    n += b.size();
    into.push_back(std::move(b));
  }
  engine_->arriving.clear();
  return n;
}

std::vector<char> tls_pipe::spare() {
  std::lock_guard<std::mutex> lk(engine_->mu);
  if (engine_->spares.empty()) return {};
  auto b = std::move(engine_->spares.back());
  engine_->spares.pop_back();
  return b;
}

std::optional<tls_result> tls_pipe::take() {
  std::lock_guard<std::mutex> lk(results_->mu);
  if (results_->done.empty()) return std::nullopt;
  auto r = std::move(results_->done.front());
  results_->done.pop_front();
  --outstanding_;
  return r;
}

}  // namespace cleave::transport::detail
