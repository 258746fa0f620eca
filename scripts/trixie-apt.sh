# Sourced by the install scripts that take a package Debian bookworm lacks (or has too old) from trixie: sets `work`
# (a temporary directory removed on exit), `sudo_cmd` (empty when root) and `apt_opts`, the apt-get options of a
# private package list for `$1` ("deb" or "deb-src" lines of trixie main), so the system's apt sources stay as they are.
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
apt_dir="$work/apt"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
echo "$1 http://deb.debian.org/debian trixie main" >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=root")
