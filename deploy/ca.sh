#!/usr/bin/env bash
# The job's certificate authority for the bulk channel's TLS, on Debian's
# openssl CLI. One CA per job: servers (parameter servers, gateways) and
# devices get certificates it signs; a revoked device is listed in DIR/crl.pem,
# which servers load (bulk_options::tls, tls_files::crl) to refuse it.
#
#   ca.sh init DIR                                   new CA in DIR (refuses an existing one)
#   ca.sh issue DIR NAME [server|device] [options]   DIR/NAME.key + DIR/NAME.pem (default: device)
#       --days N          validity (default 365)
#       --san NAME        server only, repeatable: extra DNS name or IP address
#       --start DATE --end DATE   explicit validity, YYYYMMDDHHMMSSZ (tests, renewals)
#   ca.sh revoke DIR NAME                            revoke DIR/NAME.pem, regenerate DIR/crl.pem
#   ca.sh crl DIR [--days N]                         regenerate DIR/crl.pem (default 365 days)
#   ca.sh tokens DIR N                               append N one-time join tokens to DIR/tokens
#
# Server certificates carry SAN IP:127.0.0.1 and DNS:localhost plus --san
# names, and may act as TLS server or client; device certificates are
# client-only (extendedKeyUsage clientAuth), so a device's certificate cannot
# impersonate a server even though the same CA signed both. The CN is NAME:
# it is what the channel reports as the peer's name. Keys are EC P-256 (fast
# handshakes), written with mode 0600.
set -euo pipefail

prog="$(basename "$0")"
usage() {
  sed -n '7,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "$prog: $*" >&2; exit 1; }

command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"

check_name() {
  [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]] ||
    die "bad name '$1': letters, digits, '.', '_' and '-' only, at most 64 characters"
  [[ "$1" != ca && "$1" != crl ]] || die "'$1' is reserved (ca.pem, crl.pem)"
}
check_ca() {
  [[ -f "$1/ca.pem" && -f "$1/ca.key" && -f "$1/.ca/openssl.cnf" ]] ||
    die "$1 is not a CA directory (run: $prog init $1)"
}
check_days() {
  [[ "$1" =~ ^[1-9][0-9]{0,4}$ ]] || die "--days needs a positive whole number, not '$1'"
}
check_date() {
  [[ "$1" =~ ^[0-9]{14}Z$ ]] || die "dates are YYYYMMDDHHMMSSZ, not '$1'"
}

write_config() {
  local dir="$1"
  cat >"$dir/.ca/openssl.cnf" <<EOF
# Written by ca.sh; the database lives beside it.
[ ca ]
default_ca = job_ca

[ job_ca ]
dir              = $dir/.ca
database         = \$dir/index.txt
new_certs_dir    = \$dir/newcerts
serial           = \$dir/serial
crlnumber        = \$dir/crlnumber
certificate      = $dir/ca.pem
private_key      = $dir/ca.key
default_md       = sha256
default_days     = 365
default_crl_days = 365
policy           = any_cn
unique_subject   = no
copy_extensions  = none
# Reproducible, short subjects: only the CN the request carries.
preserve         = no

[ any_cn ]
commonName = supplied

[ req ]
distinguished_name = req_dn
prompt             = no
[ req_dn ]
CN = placeholder

[ ca_ext ]
basicConstraints       = critical, CA:true, pathlen:0
keyUsage               = critical, keyCertSign, cRLSign
subjectKeyIdentifier   = hash

[ crl_ext ]
authorityKeyIdentifier = keyid:always
EOF
}

cmd_init() {
  [[ $# -eq 1 ]] || usage
  local dir="$1"
  [[ ! -e "$dir/ca.key" ]] || die "$dir already holds a CA (ca.key); refusing to overwrite it"
  mkdir -p "$dir/.ca/newcerts"
  dir="$(cd "$dir" && pwd)"
  : >"$dir/.ca/index.txt"
  echo "unique_subject = no" >"$dir/.ca/index.txt.attr"
  openssl rand -hex 16 >"$dir/.ca/serial"
  echo 1000 >"$dir/.ca/crlnumber"
  write_config "$dir"
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/ca.key" 2>/dev/null) ||
    die "cannot create the CA key in $dir"
  openssl req -new -x509 -config "$dir/.ca/openssl.cnf" -extensions ca_ext -key "$dir/ca.key" \
    -subj "/CN=cleave job CA $(basename "$dir")" -days 3650 -sha256 -out "$dir/ca.pem" 2>/dev/null ||
    die "cannot create the CA certificate in $dir"
  gen_crl "$dir" 365
  echo "$prog: CA ready in $dir (ca.pem, ca.key, crl.pem)"
}

gen_crl() {
  openssl ca -batch -config "$1/.ca/openssl.cnf" -gencrl -crldays "$2" -crlexts crl_ext \
    -out "$1/crl.pem.tmp" 2>"$1/.ca/last_error" || { cat "$1/.ca/last_error" >&2; die "cannot generate the CRL"; }
  mv "$1/crl.pem.tmp" "$1/crl.pem"
}

cmd_issue() {
  [[ $# -ge 2 ]] || usage
  local dir="$1" name="$2"
  shift 2
  local kind=device days=365 start="" end=""
  local -a sans=()
  if [[ $# -gt 0 && "$1" != --* ]]; then kind="$1"; shift; fi
  [[ "$kind" == server || "$kind" == device ]] || die "kind must be 'server' or 'device', not '$kind'"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --days) [[ $# -ge 2 ]] || usage; check_days "$2"; days="$2"; shift 2 ;;
      --san) [[ $# -ge 2 ]] || usage; sans+=("$2"); shift 2 ;;
      --start) [[ $# -ge 2 ]] || usage; check_date "$2"; start="$2"; shift 2 ;;
      --end) [[ $# -ge 2 ]] || usage; check_date "$2"; end="$2"; shift 2 ;;
      *) die "unknown option '$1'" ;;
    esac
  done
  check_ca "$dir"
  dir="$(cd "$dir" && pwd)"
  check_name "$name"
  [[ "$kind" == server || ${#sans[@]} -eq 0 ]] || die "--san applies to server certificates only"
  local ext="$dir/.ca/$name.ext" csr="$dir/.ca/$name.csr"
  {
    echo "[ leaf ]"
    echo "basicConstraints = critical, CA:false"
    echo "subjectKeyIdentifier = hash"
    echo "authorityKeyIdentifier = keyid:always"
    if [[ "$kind" == server ]]; then
      echo "keyUsage = critical, digitalSignature"
      echo "extendedKeyUsage = serverAuth, clientAuth"
      local alt="IP:127.0.0.1, DNS:localhost" s
      for s in ${sans[@]+"${sans[@]}"}; do
        if [[ "$s" =~ ^[0-9.]+$ || "$s" == *:* ]]; then alt+=", IP:$s"
        elif [[ "$s" =~ ^[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]]; then alt+=", DNS:$s"
        else die "bad --san '$s': a DNS name or an IP address"; fi
      done
      echo "subjectAltName = $alt"
    else
      echo "keyUsage = critical, digitalSignature"
      echo "extendedKeyUsage = clientAuth"
    fi
  } >"$ext"
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/$name.key.tmp" 2>/dev/null) ||
    die "cannot create a key for $name"
  openssl req -new -key "$dir/$name.key.tmp" -subj "/CN=$name" -out "$csr" 2>/dev/null ||
    die "cannot create a request for $name"
  local -a validity=(-days "$days")
  [[ -z "$start" ]] || validity+=(-startdate "$start")
  [[ -z "$end" ]] || validity+=(-enddate "$end")
  if ! openssl ca -batch -notext -config "$dir/.ca/openssl.cnf" -extfile "$ext" -extensions leaf \
      "${validity[@]}" -in "$csr" -out "$dir/$name.pem.tmp" 2>"$dir/.ca/last_error"; then
    rm -f "$dir/$name.key.tmp" "$dir/$name.pem.tmp"
    cat "$dir/.ca/last_error" >&2
    die "cannot sign the certificate for $name"
  fi
  mv "$dir/$name.key.tmp" "$dir/$name.key"
  mv "$dir/$name.pem.tmp" "$dir/$name.pem"
  rm -f "$csr"
  echo "$prog: issued $kind certificate $dir/$name.pem (key $dir/$name.key)"
}

cmd_revoke() {
  [[ $# -eq 2 ]] || usage
  local dir="$1" name="$2"
  check_ca "$dir"
  dir="$(cd "$dir" && pwd)"
  check_name "$name"
  [[ -f "$dir/$name.pem" ]] || die "no certificate $dir/$name.pem to revoke"
  openssl ca -batch -config "$dir/.ca/openssl.cnf" -revoke "$dir/$name.pem" 2>"$dir/.ca/last_error" ||
    { cat "$dir/.ca/last_error" >&2; die "cannot revoke $name"; }
  gen_crl "$dir" 365
  echo "$prog: revoked $name; servers refuse it once they load $dir/crl.pem"
}

cmd_crl() {
  [[ $# -ge 1 ]] || usage
  local dir="$1" days=365
  shift
  if [[ $# -gt 0 ]]; then
    [[ $# -eq 2 && "$1" == --days ]] || usage
    check_days "$2"
    days="$2"
  fi
  check_ca "$dir"
  dir="$(cd "$dir" && pwd)"
  gen_crl "$dir" "$days"
  echo "$prog: wrote $dir/crl.pem (valid $days days)"
}

# One-time join tokens for `cleave --role=ps --join-tokens=DIR/tokens`: a
# device without a certificate trades one for a certificate this CA signs.
cmd_tokens() {
  [[ $# -eq 2 && "$2" =~ ^[1-9][0-9]{0,3}$ ]] || usage
  local dir="$1" n="$2"
  check_ca "$dir"
  umask 077
  [[ -f "$dir/tokens" ]] || echo "# one-time join tokens; each line is struck once used" > "$dir/tokens"
  for _ in $(seq 1 "$n"); do openssl rand -hex 16 >> "$dir/tokens"; done
  echo "$prog: appended $n token(s) to $dir/tokens"
}

[[ $# -ge 1 ]] || usage
sub="$1"
shift
case "$sub" in
  init) cmd_init "$@" ;;
  issue) cmd_issue "$@" ;;
  revoke) cmd_revoke "$@" ;;
  crl) cmd_crl "$@" ;;
  tokens) cmd_tokens "$@" ;;
  -h|--help|help) usage ;;
  *) echo "$prog: unknown command '$sub'" >&2; usage ;;
esac
