#include "actors/transport/frame_client.hpp"

#include <caf/all.hpp>

#include "schema/errors.hpp"

namespace cleave::transport {

namespace {

caf::behavior frame_sink(caf::event_based_actor*, std::shared_ptr<frame_client::inbox> box) {
  return {
    [=](bulk_opened_atom, const caf::actor&, uint64_t, const std::string&) {},
    [=](bulk_peer_atom, uint64_t, const std::string&, bool) {},
    [=](bulk_frame_atom, bulk_frame& f) {  // replying at once returns the window's credit
      std::lock_guard<std::mutex> lk(box->mx);
      box->frames.push_back(std::move(f));
      box->cv.notify_all();
    },
    [=](bulk_closed_atom, uint64_t, const std::string& reason) {
      std::lock_guard<std::mutex> lk(box->mx);
      box->closed = reason.empty() ? "connection closed" : reason;
      box->cv.notify_all();
    },
  };
}

}  // namespace

frame_client::frame_client(caf::actor_system& sys, caf::actor sink, caf::actor channel,
                           std::shared_ptr<inbox> box)
    : sys_(sys), sink_(std::move(sink)), channel_(std::move(channel)), box_(std::move(box)) {}

frame_client::~frame_client() {
  caf::anon_send_exit(channel_, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sink_, caf::exit_reason::user_shutdown);
}

caf::expected<std::unique_ptr<frame_client>> frame_client::connect(caf::actor_system& sys, const std::string& host,
                                                                   uint16_t port, bulk_options opts) {
  auto box = std::make_shared<inbox>();
  auto sink = sys.spawn(frame_sink, box);
  auto channel = connect_bulk(sys, host, port, sink, std::move(opts));
  if (!channel) {
    caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
    return channel.error();
  }
  return std::unique_ptr<frame_client>(new frame_client(sys, sink, *channel, box));
}

bool frame_client::closed() const {
  std::lock_guard<std::mutex> lk(box_->mx);
  return !box_->closed.empty();
}

caf::expected<bulk_frame> frame_client::call(uint16_t kind, uint64_t tag, std::vector<char> payload,
                                             caf::timespan timeout) {
  {
    std::lock_guard<std::mutex> lk(box_->mx);
    if (!box_->closed.empty()) return fail("connection closed: " + box_->closed);
  }
  const uint64_t sent = payload.size() + frame_header_size;
  caf::error send_error;
  {
    caf::scoped_actor self{sys_};
    self->request(channel_, timeout, bulk_send_atom::value, kind, tag, std::move(payload))
      .receive([](std::vector<char>&) {}, [&](caf::error& err) { send_error = std::move(err); });
  }
  if (send_error) {
    std::lock_guard<std::mutex> lk(box_->mx);
    return fail(box_->closed.empty() ? "send failed: " + describe(send_error) : "connection closed: " + box_->closed);
  }
  bytes_sent_ += sent;
  std::unique_lock<std::mutex> lk(box_->mx);
  if (!box_->cv.wait_for(lk, timeout, [&] { return !box_->frames.empty() || !box_->closed.empty(); }))
    return fail("no answer within " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count())
                + " s");
  if (box_->frames.empty()) return fail("connection closed: " + box_->closed);
  auto frame = std::move(box_->frames.front());
  box_->frames.pop_front();
  bytes_received_ += frame.payload.size() + frame_header_size;
  return frame;
}

}  // namespace cleave::transport
