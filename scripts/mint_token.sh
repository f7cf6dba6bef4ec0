#!/usr/bin/env bash
# Mint a livegate token (HS256 with a secret, or RS256 with a private key) with openssl:
#   scripts/mint_token.sh -s SECRET|-k PRIVATE.pem [-t TTL_S] [-S 'glob,glob'] [-P 'glob,glob']
# -S: the subscribe claim, -P: the publish claim (comma-separated topic globs); -t: seconds
# until exp (default 3600). Prints the token. For tests, demos and docs/security.md; a real
# deployment mints tokens in its own backend, with its own JWT library.
set -euo pipefail -f # -f: no pathname expansion of the globs
secret="" key="" ttl=3600 sub="" pub=""
while getopts "s:k:t:S:P:" o; do
  case $o in
    s) secret=$OPTARG ;; k) key=$OPTARG ;; t) ttl=$OPTARG ;; S) sub=$OPTARG ;; P) pub=$OPTARG ;;
    *) sed -n 2,6p "$0" >&2; exit 2 ;;
  esac
done
[[ -n $secret || -n $key ]] || { sed -n 2,6p "$0" >&2; exit 2; }
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
list() { local IFS=,; local out="" p; for p in $1; do out+="${out:+,}\"$p\""; done; echo "[$out]"; }
alg=HS256; [[ -n $key ]] && alg=RS256
header=$(printf '{"alg":"%s","typ":"JWT"}' "$alg" | b64url)
claims=$(printf '{"exp":%d,"livegate":{"subscribe":%s,"publish":%s}}' \
  "$(( $(date +%s) + ttl ))" "$(list "$sub")" "$(list "$pub")" | b64url)
if [[ -n $key ]]; then
  sig=$(printf '%s' "$header.$claims" | openssl dgst -sha256 -sign "$key" -binary | b64url)
else
  sig=$(printf '%s' "$header.$claims" | openssl dgst -sha256 -hmac "$secret" -binary | b64url)
fi
echo "$header.$claims.$sig"
