#include "actors/console/http_endpoint.hpp"

#include <map>

#include <nlohmann/json.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/console/console_actor.hpp"
#include "actors/console/console_page.hpp"
#include "actors/console/controls.hpp"
#include "actors/console/device_page.hpp"
#include "actors/console/http_head.hpp"
#include "actors/console/metrics_view.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

using head_timeout_atom = caf::atom_constant<caf::atom("htimeout")>;

// What a path asks for. `/status` is the document's first address and keeps
// answering it for the clients written against it; `/` is the page, for a
// person with a browser.
enum class route { page, document, metrics, none };

route route_of(const std::string& path) {
  if (path == "/") return route::page;
  if (path == "/api/state" || path == "/status") return route::document;
  if (path == "/metrics") return route::metrics;
  return route::none;
}

struct http_conn {
  // The connection's number on this endpoint: a handle is its socket and is
  // reused once closed, so a timeout names both, and one set for an earlier
  // connection on the same socket finds another number and does nothing.
  uint64_t serial = 0;
  std::string head;
  bool answering = false;  // the console was asked; further bytes are ignored
  // Answered while the client was still sending: closing now, with its bytes
  // unread, would reset the connection and could destroy the answer in
  // flight. The rest is read and dropped until the head timeout closes it.
  bool lingering = false;
};

struct endpoint_state {
  console_handle console;
  console_endpoint_options opts;
  std::map<caf::io::connection_handle, http_conn> conns;
  uint64_t accepted = 0;  // connections so far: the next one's serial
  static inline const char* name = "cleave.console_endpoint";
};

using endpoint_broker = caf::stateful_actor<endpoint_state, caf::io::broker>;

// Writes the response and closes the connection once it is sent (or, with
// `linger`, at the head timeout).
void reply(endpoint_broker* self, caf::io::connection_handle hdl, int status,
           const std::string& type, const std::string& body, bool linger = false) {
  auto it = self->state.conns.find(hdl);
  if (it == self->state.conns.end()) return;  // closed meanwhile
  const auto text = http_response(status, type, body);
  auto& buf = self->wr_buf(hdl);
  buf.insert(buf.end(), text.begin(), text.end());
  self->flush(hdl);
  if (linger) {
    it->second.lingering = true;
    it->second.head.clear();
    return;
  }
  self->state.conns.erase(it);
  self->close(hdl);
}

// A control: its body (none is needed) is read to the end first, so that
// closing after the answer does not reset the connection under it.
void on_post(endpoint_broker* self, caf::io::connection_handle hdl, const http_head& head) {
  auto& conn = self->state.conns[hdl];
  const auto req = control_of_path(head.path);
  if (!req) {
    reply(self, hdl, 405, "text/plain",
          "POST is for /api/control/pause, resume, checkpoint or drain/ID\n");
    return;
  }
  if (head.chunked) {
    reply(self, hdl, 411, "text/plain", "a POST body needs a Content-Length\n", true);
    return;
  }
  if (head.content_length > max_http_body_bytes) {
    reply(self, hdl, 413, "text/plain",
          "a POST body is at most " + std::to_string(max_http_body_bytes) + " bytes\n", true);
    return;
  }
  if (conn.head.size() < head.size + head.content_length) return;  // read more
  if (auto no = refuse_unauthorized(self->state.opts.admin_token, head.authorization)) {
    spdlog::info("console: control {} refused: {}", head.path, no->text.substr(0, no->text.size() - 1));
    reply(self, hdl, no->status, "text/plain", no->text);
    return;
  }
  conn.answering = true;
  self->request(self->state.console, std::chrono::seconds(5), control_atom::value, *req)
    .then([=](int32_t status, std::string& text) { reply(self, hdl, status, "text/plain", text); },
          [=](caf::error& err) {
            reply(self, hdl, 503, "text/plain", "console: " + self->system().render(err) + "\n");
          });
}

void on_data(endpoint_broker* self, caf::io::new_data_msg& msg) {
  auto it = self->state.conns.find(msg.handle);
  if (it == self->state.conns.end() || it->second.answering || it->second.lingering) return;
  auto& conn = it->second;
  // Room for one head and one capped body; the parser refuses a longer head.
  constexpr size_t cap = max_http_head_bytes + max_http_body_bytes;
  const size_t room = cap - std::min(conn.head.size(), cap);
  conn.head.append(msg.buf.data(), std::min(msg.buf.size(), room));
  auto head = parse_http_head(conn.head);
  if (!head) {
    const bool too_long = conn.head.size() >= max_http_head_bytes;
    reply(self, msg.handle, too_long ? 431 : 400, "text/plain", describe(head.error()) + "\n",
          too_long);
    return;
  }
  if (!*head) return;  // read more
  if ((*head)->method == "POST") {
    on_post(self, msg.handle, **head);
    return;
  }
  if ((*head)->method != "GET") {
    reply(self, msg.handle, 405, "text/plain", "the console answers GET, and POST for controls\n");
    return;
  }
  const auto wanted = route_of((*head)->path);
  if (wanted == route::none) {
    reply(self, msg.handle, 404, "text/plain", "try GET /, /api/state or /metrics\n");
    return;
  }
  if (wanted == route::page) {  // static: the console need not be asked
    reply(self, msg.handle, 200, std::string(console_page_content_type), std::string(console_page()));
    return;
  }
  // Only the document reads a query (one page of its device table);
  // elsewhere it is ignored, as a browser's cache-buster would be.
  std::optional<device_page_query> page;
  if (wanted == route::document) {
    auto asked = parse_device_page_query((*head)->query);
    if (!asked) {
      reply(self, msg.handle, 400, "text/plain", describe(asked.error()) + "\n");
      return;
    }
    page = std::move(*asked);
  }
  conn.answering = true;
  const auto hdl = msg.handle;
  self->request(self->state.console, std::chrono::seconds(5), caf::get_atom::value)
    .then([=](std::string& doc) {
            if (wanted == route::document && !page) {
              reply(self, hdl, 200, "application/json", doc + "\n");
              return;
            }
            // The console hands out its document as text; reading it back
            // keeps one source for both views, and it is a few KiB.
            auto parsed = nlohmann::json::parse(doc, nullptr, false);
            if (parsed.is_discarded()) {
              reply(self, hdl, 503, "text/plain", "console: its document is not JSON\n");
              return;
            }
            if (page) {
              reply(self, hdl, 200, "application/json",
                    page_console_document(std::move(parsed), *page).dump() + "\n");
              return;
            }
            reply(self, hdl, 200, std::string(metrics_content_type), render_metrics(parsed));
          },
          [=](caf::error& err) {
            reply(self, hdl, 503, "text/plain", "console: " + self->system().render(err) + "\n");
          });
}

// The endpoint lives as long as its console.
caf::behavior endpoint(endpoint_broker* self, caf::io::doorman_ptr dm, console_handle console,
                       console_endpoint_options opts) {
  self->add_doorman(std::move(dm));
  self->state.console = std::move(console);
  self->state.opts = opts;
  self->monitor(self->state.console);
  self->set_down_handler([=](caf::down_msg& down) {
    if (down.source == self->state.console.address()) self->quit(caf::exit_reason::normal);
  });
  return {
    [=](caf::io::new_connection_msg& msg) {
      auto& st = self->state;
      if (st.conns.size() >= st.opts.max_connections) {
        self->close(msg.handle);
        return;
      }
      const uint64_t serial = ++st.accepted;
      http_conn conn;
      conn.serial = serial;
      st.conns.emplace(msg.handle, std::move(conn));
      self->configure_read(msg.handle, caf::io::receive_policy::at_most(2048));
      self->delayed_send(self, st.opts.head_timeout, head_timeout_atom::value, msg.handle, serial);
    },
    [=](caf::io::new_data_msg& msg) { on_data(self, msg); },
    [=](head_timeout_atom, caf::io::connection_handle hdl, uint64_t serial) {
      auto it = self->state.conns.find(hdl);
      if (it == self->state.conns.end() || it->second.serial != serial || it->second.answering) return;
      self->state.conns.erase(it);
      self->close(hdl);  // a stalled client gets nothing; a lingering one has its answer
    },
    [=](caf::io::connection_closed_msg& msg) { self->state.conns.erase(msg.handle); },
    [=](caf::io::acceptor_closed_msg&) { spdlog::warn("console: listening socket closed"); },
  };
}

}  // namespace

caf::expected<uint16_t> open_console_endpoint(caf::actor_system& sys, uint16_t port,
                                              console_handle console, console_endpoint_options opts) {
  if (!console) return fail("the console endpoint needs a console actor");
  auto& mm = sys.middleman();
  const char* in = opts.bind_address.empty() ? nullptr : opts.bind_address.c_str();
  auto dm = mm.backend().new_tcp_doorman(port, in, true);
  if (!dm)
    return fail("the console cannot listen on port " + std::to_string(port) + ": " +
                sys.render(dm.error()));
  const uint16_t bound = (*dm)->port();
  mm.spawn_broker(endpoint, std::move(*dm), std::move(console), std::move(opts));
  return bound;
}

}  // namespace cleave
