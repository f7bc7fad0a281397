// Sender: who a request came from, as the driver authenticated it (the TLS certificate of its
// connection), and what that lets it ask. Without authentication configured (insecure mode,
// the simulator) every sender is kUnchecked and trusted as before. Plain value type.
#ifndef CHORD_PROTOCOL_SENDER_H_
#define CHORD_PROTOCOL_SENDER_H_

#include <cstdint>
#include <string>

namespace chord {

struct Sender {
  enum class Role : uint8_t {
    kUnchecked,  // no authentication configured: everything is allowed (insecure mode)
    kMember,     // a ring member: its certificate names member_addr
    kAdmin,      // a client that may also list every key (dump) and run ring-wide commands
    kWriter,     // a client that may read and write
    kReader,     // a client that may only read
    kNobody,     // authenticated as nothing this node accepts
  };

  Role role = Role::kUnchecked;
  std::string member_addr;     // kMember: the certified process address, HOST:PORT
  uint32_t member_vnodes = 1;  // kMember: the ring positions its certificate allows

  static Sender Member(std::string addr, uint32_t vnodes) {
    return Sender{Role::kMember, std::move(addr), vnodes};
  }
  static Sender Client(Role role) { return Sender{role, {}, 0}; }
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_SENDER_H_
