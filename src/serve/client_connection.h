#pragma once

#include <httplib.h>

// Whether the client of a request has gone, for a handler that waits for the model before it
// writes anything (a whole completion). cpp-httplib 0.11 does not tell a handler (0.15's
// Request::is_connection_closed does): the connection's socket is found among this process's by
// its two addresses, which the request carries, and a socket whose peer has closed reads as end
// of file. Linux only, as attn serve is.
namespace attn::serve {

class ClientConnection {
 public:
  explicit ClientConnection(const httplib::Request& request);

  // True once the client has closed its end (or reset it). False while it is open, and when the
  // socket was not found.
  bool closed() const;

 private:
  int socket_ = -1;
};

}  // namespace attn::serve
