#pragma once
// One connection's TLS work, run either inline (on the caller's thread, at
// once) or on a crypto_pool strand, so the expensive part (decrypting
// ciphertext into a frame's buffer, encrypting a frame) leaves the broker's
// thread. No sockets and no actors: the bulk channel's byte path (bulk_io)
// moves bytes between this and CAF; a test can drive it alone.
//
// Ownership is what keeps it race-free:
//   - The tls_session (and the ciphertext it is reading) lives in an engine
//     that jobs share. Only one job of a connection runs at a time (its
//     strand), and the owner touches the session itself (session(), inline
//     operations) only while idle(): every job it posted has finished and its
//     result has been taken, so the strand's and the result queue's locks
//     order every access.
//   - Ciphertext read while a decryption runs is handed over under the
//     engine's own lock (arrived()), as are spent read buffers (spare()).
//   - Everything else a job touches is moved into it (ciphertext buffers, the
//     unit buffer plaintext lands in, the plaintext to seal, the vector the
//     ciphertext goes to) and moved back out in its result.
//   - Results are taken in the order the jobs were posted (one strand), so
//     sealed records reach the socket in sequence order.
//   - Destroying the pipe cancels jobs not yet started; a running one
//     finishes on the engine it shares and its result is dropped with it.

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <caf/error.hpp>

#include "actors/transport/bulk_channel.hpp"
#include "actors/transport/crypto_pool.hpp"
#include "actors/transport/tls_session.hpp"

namespace cleave::transport::detail {

using payload_buffer = std::variant<std::vector<char>, std::vector<float>, bulk_buffer>;

// Plaintext to seal: `head` then `body`'s bytes (a bulk_buffer's whole
// storage, frame header included; a vector's raw bytes). The body comes back
// in the result so the sender gets its buffer back.
struct seal_input {
  std::vector<char> head;
  payload_buffer body;
  bool frame = false;  // a queued send's frame (the caller's bookkeeping)
};

struct tls_result {
  bool sealed = false;  // which operation: seal, or open (decrypt)
  caf::error err;       // the session's: close the connection
  std::vector<char> wire;  // ciphertext to send, in order (seal; open: handshake, alerts, key updates)
  // open
  std::vector<char> unit;  // the unit buffer, back
  size_t have = 0;         // plaintext bytes in it
  bool handshake_done = false;
  size_t buffered = 0;  // ciphertext taken and not yet decrypted
  // seal
  seal_input input;
};

struct tls_engine;

class tls_pipe {
 public:
  // pool null: every operation runs inline. notify is called (on a pool
  // thread) after each posted job's result is ready for take().
  tls_pipe(std::shared_ptr<const tls_context> ctx, const std::string& peer_host,
           std::shared_ptr<crypto_pool> pool, std::function<void()> notify);
  ~tls_pipe();
  tls_pipe(const tls_pipe&) = delete;
  tls_pipe& operator=(const tls_pipe&) = delete;

  bool offloads() const { return strand_ != nullptr; }
  // No job posted whose result has not been taken.
  bool idle() const { return outstanding_ == 0; }
  size_t outstanding() const { return outstanding_; }
  // Only while idle().
  tls_session& session();

  // Decrypts into unit[have, want) from the ciphertext the engine holds and
  // then `ciphertext`, until the unit is full or the ciphertext runs out.
  // With run_inline (requires idle()) it runs now and returns its result;
  // otherwise it is posted and the result comes from take().
  std::optional<tls_result> open(std::deque<std::vector<char>>&& ciphertext, std::vector<char>&& unit,
                                 size_t have, size_t want, bool run_inline);
  // The same, inline (requires idle()), for a small read decrypted from the
  // caller's buffer without taking it: nothing of `data` is kept borrowed
  // (what is left of it is copied).
  tls_result open_in_place(const char* data, size_t size, std::vector<char>&& unit, size_t have, size_t want);
  // Encrypts `in`, appending the ciphertext to `wire` (returned in the result).
  std::optional<tls_result> seal(seal_input&& in, std::vector<char>&& wire, bool run_inline);

  // Ciphertext read while a posted open() runs: that job decrypts it too if
  // it still lacks bytes, else take_arrived() hands it back (returns bytes).
  void arrived(std::vector<char>&& ciphertext);
  size_t take_arrived(std::deque<std::vector<char>>& into);
  // A read buffer the pipe is done with (empty if none), for the next read.
  std::vector<char> spare();
  // Frees the spare read buffers (a quiet connection).
  void trim();

  // The next finished posted job's result, in posting order.
  std::optional<tls_result> take();

 private:
  struct results {
    std::mutex mu;
    std::deque<tls_result> done;
  };
  std::optional<tls_result> run(std::function<tls_result()> work, bool run_inline);

  std::shared_ptr<tls_engine> engine_;
  std::shared_ptr<crypto_pool> pool_;
  std::shared_ptr<crypto_strand> strand_;
  std::shared_ptr<results> results_;
  std::function<void()> notify_;
  size_t outstanding_ = 0;
};

// A seal_input's body bytes.
const char* body_data(const payload_buffer& b);
size_t body_size(const payload_buffer& b);

}  // namespace cleave::transport::detail
