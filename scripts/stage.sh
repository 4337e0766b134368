# Sourced by the CI scripts: `stage NAME COMMAND...` runs the command and prints its wall time, so
# that every CI log shows where its minutes went.
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "stage ${name}: $((SECONDS - start)) s"
}
