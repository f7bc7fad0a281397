// ListenOnLoopback: a listening TCP socket on 127.0.0.1 at a port the kernel picks, for test
// stand-ins of servers a node or a tool dials (a trickling Redis, a dribbling peer). Any thread.
#ifndef CHORD_TESTS_INTEGRATION_LOOPBACK_LISTENER_H_
#define CHORD_TESTS_INTEGRATION_LOOPBACK_LISTENER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace chord::testing {

// The listening socket (close it yourself), with its port in *port; -1 when it cannot listen.
inline int ListenOnLoopback(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 8) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace chord::testing

#endif  // CHORD_TESTS_INTEGRATION_LOOPBACK_LISTENER_H_
