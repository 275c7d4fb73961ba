# The bench scripts' checks of their arguments and of each run, sourced by them (`. "$here/lib.sh"`)
# after they set `me`, their name in messages. A bad argument is one line on stderr and exit 2;
# a run that fails or prints no result is one line naming it and exit 1 (a median over the
# rounds that did run would hide it).

# need_int FLAG VALUE MIN: VALUE is a decimal integer >= MIN.
need_int() {
    case $2 in
    '' | *[!0-9]*) echo "$me: $1 '$2': expected an integer >= $3" >&2; exit 2 ;;
    esac
    [ "$2" -ge "$3" ] || { echo "$me: $1 '$2': expected an integer >= $3" >&2; exit 2; }
}

# rounds_opt USAGE ARG...: the options of a script whose one option is -r ROUNDS (default 3, at
# least 1); sets rounds, and nopt to the number of arguments they took (the caller shifts them).
rounds_opt() {
    usage=$1
    shift
    rounds=3
    OPTIND=1
    while getopts r: opt; do
        case $opt in
        r) rounds=$OPTARG ;;
        *) echo "usage: $0 $usage" >&2; exit 2 ;;
        esac
    done
    nopt=$((OPTIND - 1))
    need_int -r "$rounds" 1
}

# need_bin PATH: an executable file.
need_bin() {
    [ -f "$1" ] && [ -x "$1" ] || { echo "$me: $1 is not an executable file (build it: make build)" >&2; exit 2; }
}

# need_configs CONFIG...: each one of qkt bench's configs.
need_configs() {
    for c; do
        case $c in
        tiny | small | medium | cell32 | cell128) ;;
        *) echo "$me: config '$c': expected tiny, small, medium, cell32 or cell128" >&2; exit 2 ;;
        esac
    done
}

# run_failed WHAT OUTPUT: WHAT failed; its output's last line says why.
run_failed() {
    why=$(printf '%s\n' "$2" | sed '/^$/d' | tail -1)
    echo "$me: $1 failed: ${why:-no output}" >&2
    exit 1
}

# bench_run WHAT CMD...: the output (stdout and stderr) of a `qkt bench` step run, or run_failed
# naming WHAT when it fails or prints no ms_per_step.
bench_run() {
    what=$1
    shift
    out=$("$@" 2>&1) || run_failed "$what" "$out"
    case $out in *" ms_per_step="*) ;; *) run_failed "$what (no ms_per_step)" "$out" ;; esac
    printf '%s\n' "$out"
}

# sgemm_peak THREADS CMD...: the GFLOP/s of `CMD bench --sgemm-peak --threads THREADS` (CMD: the
# qkt binary, or e.g. `taskset -c 1 build/qkt`), or run_failed.
sgemm_peak() {
    t=$1
    shift
    out=$("$@" bench --sgemm-peak --threads "$t" 2>&1) || run_failed "$* bench --sgemm-peak" "$out"
    g=$(echo "$out" | sed -n 's/.*gflops=\([0-9.]*\).*/\1/p')
    [ -n "$g" ] || run_failed "$* bench --sgemm-peak (no gflops)" "$out"
    echo "$g"
}

# The awk function med(arr, n): the median of arr[1..n] (sorts arr in place). The summaries'
# awk programs start with it: awk "$MED_AWK"'...'.
MED_AWK='
function med(arr, n,    i, j, v) {
    for (i = 2; i <= n; i++) { v = arr[i]; j = i - 1; while (j > 0 && arr[j] > v) { arr[j + 1] = arr[j]; j-- } arr[j + 1] = v }
    return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}
'
