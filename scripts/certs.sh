#!/usr/bin/env bash
# Makes the certificates of a chord cluster with the openssl CLI: a cluster CA, and member and
# client certificates it signs (EC P-256 keys, TLS 1.3 mutual authentication).
#
#   certs.sh ca DIR [--force]            DIR/ca.pem and DIR/ca.key, a new cluster CA; refuses
#                                        to replace an existing one without --force
#   certs.sh member DIR HOST:PORT [--vnodes V] [--name FILEBASE]
#                                        DIR/member-HOST_PORT.pem and .key (or FILEBASE.pem
#                                        and .key): a ring member that may serve HOST:PORT
#                                        with V ring positions (default 1, at most 64)
#   certs.sh client DIR NAME --role read|write|admin
#                                        DIR/client-NAME.pem and .key: a client that may
#                                        read; read and write; or also dump and run ring-wide
#                                        commands
#   certs.sh help                        this text
#
# HOST is an IPv4 address written the one way a ring address is (no leading zeros), PORT is
# 1 to 65535; NAME and FILEBASE are letters, digits, '.', '_' and '-'. A member certificate
# carries the subject alternative names URI:chord-member://HOST:PORT (with ?vnodes=V when
# V > 1) and IP:HOST; a client certificate URI:chord-client://NAME?role=ROLE
# (protocol/tls_context.h reads them). Member and client certificates are valid for 825
# days, the CA for 3650; member and client files are replaced when they exist. Keys are
# mode 600. Give a node --tls-cert DIR/member-....pem --tls-key DIR/member-....key
# --tls-ca DIR/ca.pem.
set -euo pipefail

LEAF_DAYS=825
CA_DAYS=3650
MAX_VNODES=64  # kMaxVnodesPerProcess in protocol/ring_address.h
NAME_RE='^[A-Za-z0-9._-]{1,64}$'

die() {
  printf 'certs.sh: %s\n' "$*" >&2
  exit 1
}

# A usage mistake: the sentence, exit code 2.
usage_error() {
  printf 'certs.sh: %s\n' "$*" >&2
  exit 2
}

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

# Whether $1 is a decimal number without leading zeros from $2 to $3.
canonical_number() {
  [[ "$1" =~ ^(0|[1-9][0-9]{0,4})$ ]] && (($1 >= $2 && $1 <= $3))
}

# Checks that $1 is HOST:PORT as a ring address is spelled (IPv4, no leading zeros).
check_member_addr() {
  local addr="$1" host port octet
  [[ "$addr" =~ ^([^:]+):([^:]+)$ ]] ||
    usage_error "\"$addr\" is not HOST:PORT; write the member address like 127.0.0.1:4000"
  host="${BASH_REMATCH[1]}"
  port="${BASH_REMATCH[2]}"
  local -a octets
  IFS=. read -r -a octets <<<"$host"
  [[ "$host" =~ ^[0-9.]+$ && "$host" != *. && ${#octets[@]} -eq 4 ]] ||
    usage_error "\"$host\" is not an IPv4 address; a member address is A.B.C.D:PORT," \
      "not a host name"
  for octet in "${octets[@]}"; do
    canonical_number "$octet" 0 255 ||
      usage_error "\"$host\" is not an IPv4 address written canonically (four octets 0 to 255" \
        "without leading zeros), as a ring address must be"
  done
  canonical_number "$port" 1 65535 ||
    usage_error "\"$port\" is not a canonical port number (1 to 65535, no leading zeros)"
}

need_openssl() {
  command -v openssl >/dev/null 2>&1 ||
    die "the openssl command is missing; install the openssl package (scripts/lib.sh lists it)"
}

# Makes DIR (mode 700 when new) or checks it is a writable directory.
prepare_dir() {
  if [[ ! -e "$1" ]]; then
    (umask 077 && mkdir -p "$1") || die "cannot create the directory $1"
  fi
  [[ -d "$1" && -w "$1" ]] || die "$1 is not a writable directory"
}

# new_key FILE: a fresh EC P-256 private key, mode 600 from the start.
new_key() {
  rm -f "$1"
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" \
    2>"$WORK/err") || die "openssl could not make a key in $1: $(head -1 "$WORK/err")"
  chmod 600 "$1"
}

# sign_leaf DIR BASE SUBJECT EXTENSIONS...: BASE.key and BASE.pem in DIR, signed by DIR's CA,
# with the given X.509v3 extension lines.
sign_leaf() {
  local dir="$1" base="$2" subject="$3"
  shift 3
  [[ -f "$dir/ca.pem" && -f "$dir/ca.key" ]] ||
    die "$dir has no cluster CA (ca.pem and ca.key); make one first: certs.sh ca $dir"
  {
    printf '[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n[leaf]\n'
    printf '%s\n' "$@" \
      'subjectKeyIdentifier = hash' 'authorityKeyIdentifier = keyid'
  } >"$WORK/leaf.cnf"
  new_key "$dir/$base.key"
  openssl req -x509 -new -config "$WORK/leaf.cnf" -extensions leaf -key "$dir/$base.key" \
    -subj "$subject" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -days "$LEAF_DAYS" -sha256 \
    -out "$dir/$base.pem" 2>"$WORK/err" ||
    die "openssl could not sign $dir/$base.pem with $dir/ca.key: $(head -1 "$WORK/err")"
  chmod 644 "$dir/$base.pem"
  openssl verify -CAfile "$dir/ca.pem" "$dir/$base.pem" >/dev/null 2>"$WORK/err" ||
    die "$dir/$base.pem does not verify against $dir/ca.pem: $(head -1 "$WORK/err")"
  echo "$dir/$base.pem"
  echo "$dir/$base.key"
}

cmd_ca() {
  local dir="" force=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --force) force=1 ;;
      -*) usage_error "unknown option \"$1\" for ca; see certs.sh help" ;;
      *)
        [[ -z "$dir" ]] || usage_error "ca takes one directory, not also \"$1\""
        dir="$1"
        ;;
    esac
    shift
  done
  [[ -n "$dir" ]] || usage_error "give the directory for the CA: certs.sh ca DIR"
  prepare_dir "$dir"
  if [[ $force -eq 0 && (-e "$dir/ca.pem" || -e "$dir/ca.key") ]]; then
    die "$dir already holds a cluster CA; replacing it invalidates every certificate it" \
      "signed, so give --force if that is what you want"
  fi
  printf '%s\n' '[req]' 'distinguished_name = dn' 'prompt = no' '[dn]' '[ca]' \
    'basicConstraints = critical, CA:TRUE, pathlen:0' \
    'keyUsage = critical, keyCertSign, cRLSign' \
    'subjectKeyIdentifier = hash' >"$WORK/ca.cnf"
  new_key "$dir/ca.key"
  # A random suffix keeps two clusters' CAs apart by name as well as by key.
  openssl req -new -x509 -config "$WORK/ca.cnf" -extensions ca -key "$dir/ca.key" \
    -subj "/O=chord/CN=chord cluster CA $(printf '%08x' "${SRANDOM:-$RANDOM}")" \
    -days "$CA_DAYS" -sha256 -out "$dir/ca.pem" 2>"$WORK/err" ||
    die "openssl could not make the CA certificate: $(head -1 "$WORK/err")"
  chmod 644 "$dir/ca.pem"
  echo "$dir/ca.pem"
  echo "$dir/ca.key"
}

cmd_member() {
  local dir="" addr="" vnodes=1 base=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --vnodes)
        [[ $# -ge 2 ]] || usage_error "--vnodes needs a number"
        canonical_number "$2" 1 "$MAX_VNODES" ||
          usage_error "\"$2\" is not a number of ring positions (1 to $MAX_VNODES, no" \
            "leading zeros)"
        vnodes="$2"
        shift
        ;;
      --name)
        [[ $# -ge 2 ]] || usage_error "--name needs a file name"
        [[ "$2" =~ $NAME_RE ]] ||
          usage_error "\"$2\" is not a file name of letters, digits, '.', '_' and '-'"
        base="$2"
        shift
        ;;
      -*) usage_error "unknown option \"$1\" for member; see certs.sh help" ;;
      *)
        if [[ -z "$dir" ]]; then
          dir="$1"
        elif [[ -z "$addr" ]]; then
          addr="$1"
        else
          usage_error "member takes a directory and one HOST:PORT, not also \"$1\""
        fi
        ;;
    esac
    shift
  done
  [[ -n "$addr" ]] ||
    usage_error "give the directory and the member address: certs.sh member DIR HOST:PORT"
  check_member_addr "$addr"
  [[ -d "$dir" ]] || die "$dir does not exist; make the CA first: certs.sh ca $dir"
  local host="${addr%:*}" uri="chord-member://$addr"
  if ((vnodes > 1)); then
    uri+="?vnodes=$vnodes"
  fi
  [[ -n "$base" ]] || base="member-${host}_${addr##*:}"
  sign_leaf "$dir" "$base" "/O=chord/CN=chord member $addr" \
    'basicConstraints = critical, CA:FALSE' \
    'keyUsage = critical, digitalSignature' \
    'extendedKeyUsage = serverAuth, clientAuth' \
    "subjectAltName = URI:$uri, IP:$host"
}

cmd_client() {
  local dir="" name="" role=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --role)
        [[ $# -ge 2 ]] || usage_error "--role needs read, write or admin"
        [[ "$2" == read || "$2" == write || "$2" == admin ]] ||
          usage_error "\"$2\" is not a role; give --role read, write or admin"
        role="$2"
        shift
        ;;
      -*) usage_error "unknown option \"$1\" for client; see certs.sh help" ;;
      *)
        if [[ -z "$dir" ]]; then
          dir="$1"
        elif [[ -z "$name" ]]; then
          name="$1"
        else
          usage_error "client takes a directory and one NAME, not also \"$1\""
        fi
        ;;
    esac
    shift
  done
  [[ -n "$name" ]] ||
    usage_error "give the directory and the client name: certs.sh client DIR NAME --role ROLE"
  [[ "$name" =~ $NAME_RE ]] ||
    usage_error "\"$name\" is not a client name of 1 to 64 letters, digits, '.', '_' and '-'"
  [[ -n "$role" ]] || usage_error "give the client's role: --role read, write or admin"
  [[ -d "$dir" ]] || die "$dir does not exist; make the CA first: certs.sh ca $dir"
  sign_leaf "$dir" "client-$name" "/O=chord/CN=chord client $name" \
    'basicConstraints = critical, CA:FALSE' \
    'keyUsage = critical, digitalSignature' \
    'extendedKeyUsage = clientAuth' \
    "subjectAltName = URI:chord-client://$name?role=$role"
}

[[ $# -ge 1 ]] || usage_error "give a command: ca, member, client or help"
command="$1"
shift
case "$command" in
  help | -h | --help)
    usage
    exit 0
    ;;
  ca | member | client) ;;
  *) usage_error "\"$command\" is not a command; give ca, member, client or help" ;;
esac
need_openssl
WORK="$(mktemp -d "${TMPDIR:-/tmp}/chord-certs.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"cmd_$command" "$@"
