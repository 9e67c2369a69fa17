#!/usr/bin/env bash
# Runs a command as on a machine with no Vulkan loader: in a private mount namespace
# (`unshare -m`; `unshare -m -r` when not root), every `libvulkan.so.1` the dynamic linker
# could load (those `ldconfig -p` lists, those on LD_LIBRARY_PATH and in the usual folders)
# is hidden behind /dev/null, the link and the file it resolves to alike. Nothing outside
# the namespace changes. Before the command runs, the hiding is checked: no such path may
# still read as ELF, and loading `libvulkan.so.1` (through python3's ctypes, where python3
# exists) must fail; otherwise this script fails loudly. DYNSMEM_REQUIRE_WGSL is unset for
# the command: without a loader the WGSL tests must skip, not fail.
#
#   bash ci/no-vulkan.sh cargo test --release --test bad_input
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }

if [ "${DYNSMEM_NO_VULKAN_NS:-}" != 1 ]; then
  root=(); [ "$(id -u)" -eq 0 ] || root=(-r)
  # --propagation private (unshare's default with -m, named here): the mounts stay inside.
  exec env DYNSMEM_NO_VULKAN_NS=1 unshare -m "${root[@]}" --propagation private bash "$0" "$@"
fi
unset DYNSMEM_NO_VULKAN_NS

fail() { echo "ci/no-vulkan.sh: FAILED: $*" >&2; exit 1; }

# Every name the loader goes by on this machine, then the files they resolve to.
ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
multiarch="$(uname -m)-linux-gnu"
mapfile -t names < <(
  {
    "$ldconfig_bin" -p | awk '$1 == "libvulkan.so.1" { print $NF }'
    IFS=: read -r -a ld_dirs <<<"${LD_LIBRARY_PATH:-}"
    for d in "${ld_dirs[@]}" "/usr/lib/$multiarch" "/lib/$multiarch" /usr/lib64 /lib64 /usr/lib /usr/local/lib; do
      if [ -n "$d" ] && [ -e "$d/libvulkan.so.1" ]; then echo "$d/libvulkan.so.1"; fi
    done
  } | sort -u
)
hidden=()
declare -A mounted=()
for p in "${names[@]}"; do
  # The file the name resolves to, then the name itself (a bind over a link lands on the
  # file it names, so that one is skipped as mounted already; both are checked below).
  for q in "$(readlink -f "$p")" "$p"; do
    [[ " ${hidden[*]} " == *" $q "* ]] || hidden+=("$q")
    point=$(readlink -f "$q")
    [ -z "${mounted[$point]:-}" ] || continue
    mount --bind /dev/null "$point" || fail "could not hide $q"
    mounted[$point]=1
  done
done

# The checks: every listed path (and ldconfig's list afresh) unreadable as ELF; no load.
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
mapfile -t listed < <("$ldconfig_bin" -p | awk '$1 == "libvulkan.so.1" { print $NF }')
for p in "${hidden[@]}" "${listed[@]}"; do
  if is_elf "$p"; then fail "$p still reads as ELF after the bind mounts"; fi
done
if command -v python3 >/dev/null; then
  if err=$(python3 -c "import ctypes; ctypes.CDLL('libvulkan.so.1')" 2>&1); then
    fail "libvulkan.so.1 still loads (python3 ctypes) with ${hidden[*]:-nothing} hidden"
  fi
  echo "ci/no-vulkan.sh: loading libvulkan.so.1 fails as it should: ${err##*$'\n'}"
fi
echo "ci/no-vulkan.sh: Vulkan loader hidden: ${hidden[*]:-nothing to hide, no loader installed} (${#mounted[@]} bind mounts)"

unset DYNSMEM_REQUIRE_WGSL
exec "$@"
