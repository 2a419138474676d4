# Helpers of the GPU suite's scripts; sourced, not run.

# Add a program's closing "N passed, N failed" line to PASSED and FAILED;
# a log without one (a crash, a build failure) counts as one failure.
add_counts() {
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" 2>/dev/null | tail -1)
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        PASSED=$((PASSED + BASH_REMATCH[1])) FAILED=$((FAILED + BASH_REMATCH[2]))
    else
        FAILED=$((FAILED + 1))
    fi
}
