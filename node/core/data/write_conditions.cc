#include "node/core/data/write_conditions.h"

#include "node/core/record_order.h"

namespace chord {

WriteCondition ConditionOf(const wire::Envelope& request) {
  WriteCondition c;
  if (request.has_put()) {
    c.if_absent = request.put().if_absent();
    c.if_version = request.put().if_version();
  } else if (request.has_del()) {
    c.if_version = request.del().if_version();
  }
  return c;
}

bool RecordLive(const wire::Record& rec, uint64_t now_wall_ms) {
  if (rec.deleted()) return false;
  return rec.expires_unix_ms() == 0 || rec.expires_unix_ms() > now_wall_ms;
}

ConditionOutcome CheckCondition(const WriteCondition& cond, const wire::Record* current,
                                uint64_t now_wall_ms) {
  ConditionOutcome out;
  const bool live = current != nullptr && RecordLive(*current, now_wall_ms);
  out.current_version = live ? current->version() : 0;
  if (cond.if_absent && live) {
    out.holds = false;
    out.error = "the key already exists at version " + std::to_string(out.current_version) +
                "; read it and retry";
  } else if (cond.if_version != 0 && out.current_version != cond.if_version) {
    out.holds = false;
    out.error = (live ? "the key is at version " + std::to_string(out.current_version)
                      : std::string("the key does not exist (version 0)")) +
                ", not " + std::to_string(cond.if_version) + "; read it again and retry";
  }
  return out;
}

std::string TtlProblem(uint64_t ttl_ms) {
  if (ttl_ms == 0 || (ttl_ms >= kMinTtlMs && ttl_ms <= kMaxTtlMs)) return "";
  return "the time to live must be between " + std::to_string(kMinTtlMs) + " ms and " +
         std::to_string(kMaxTtlMs) + " ms (10 years); give a shorter --ttl";
}

std::string ConditionProblem(const wire::Envelope& request) {
  if (request.has_put()) {
    if (request.put().if_absent() && request.put().if_version() != 0) {
      return "a put takes --if-absent or --if-version, not both; give one";
    }
    return TtlProblem(request.put().ttl_ms());
  }
  return "";
}

uint64_t ExpiryOf(uint64_t version, uint64_t ttl_ms) {
  return ttl_ms == 0 ? 0 : VersionWallMs(version) + ttl_ms;
}

}  // namespace chord
