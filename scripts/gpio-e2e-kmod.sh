# Sourced by scripts/gpio-e2e.sh: the kernel responder of kmod/ in the QEMU
# guests. Uses its variables (CACHE, KVER, KABI, OUT, REPO, PARTS,
# KMOD_EDGES) and functions (log, die, has_part).
#   build_responder FLAVOUR       build rtlat_responder.ko against the flavour's headers
#   cross_responder               build it for arm64 and armhf against Debian's headers (no warnings)
#   responder_into FLAVOUR ROOT   put it and the guest script into an initramfs tree
#   check_responder FLAVOUR       check the guest's responder results; print the medians


build_responder() {
    local f=$1 t0
    local H=$CACHE/build/$KVER/$f/tree/usr/src/linux-headers-$KABI-$f
    t0=$(date +%s%N)
    # kmod-build.sh fails on any compiler warning.
    "$REPO/scripts/kmod-build.sh" --kdir "$H" --out "$OUT/kmod-$f" > "$OUT/kmod-build-$f.log" 2>&1 || {
        cat "$OUT/kmod-build-$f.log" >&2
        die "$f: the responder module did not build (without warnings) against $H"
    }
    # The module the guest loads is DKMS's, built and installed as a board
    # would (docs/irq.md), into a private DKMS tree instead of /usr/src,
    # /var/lib/dkms and /lib/modules.
    command -v dkms > /dev/null || die "dkms is missing (apt-get install --no-install-recommends dkms)"
    local D=$OUT/dkms-$f
    rm -rf "$D"
    mkdir -p "$D/src" "$D/tree" "$D/lib/modules/$KABI-$f"
    local dk=(--sourcetree "$D/src" --dkmstree "$D/tree" --installtree "$D/lib/modules")
    if ! { dkms add "$REPO/kmod" "${dk[@]}" &&
        dkms install rtlat-responder/1 -k "$KABI-$f" --kernelsourcedir "$H" --no-depmod "${dk[@]}"; } \
        > "$OUT/dkms-$f.log" 2>&1; then
        cat "$OUT/dkms-$f.log" "$D"/tree/rtlat-responder/1/build/make.log >&2 2> /dev/null
        die "$f: dkms could not build and install kmod/ against $H"
    fi
    [ -n "$(find "$D/lib/modules/$KABI-$f/updates/dkms" -name 'rtlat_responder.ko*' 2> /dev/null)" ] ||
        die "$f: dkms installed no rtlat_responder.ko under updates/dkms (see $OUT/dkms-$f.log)"
    # The test-only GPIO chip that cannot sleep (tests/fixtures/irq/fastgpio),
    # against the irq_sim built beside gpio-sim.
    local F=$OUT/fastgpio-$f
    rm -rf "$F"
    mkdir -p "$F"
    cp "$REPO/tests/fixtures/irq/fastgpio/rtlat_fastgpio.c" "$F/"
    echo 'obj-m := rtlat_fastgpio.o' > "$F/Kbuild"
    make -C "$H" M="$F" modules CONFIG_DEBUG_INFO_BTF_MODULES= \
        KBUILD_EXTRA_SYMBOLS="$CACHE/build/$KVER/$f/mod/Module.symvers" > "$F/build.log" 2>&1 || {
        cat "$F/build.log" >&2
        die "$f: rtlat_fastgpio.ko did not build"
    }
    ! grep -q 'warning:' "$F/build.log" || { cat "$F/build.log" >&2; die "$f: rtlat_fastgpio.ko built with warnings"; }
    log "$f: built rtlat_responder.ko against Linux $KABI-$f (kmod-build.sh, dkms install) and rtlat_fastgpio.ko in $((($(date +%s%N) - t0) / 1000000)) ms"
}

cross_responder() {
    local a t0
    for a in arm64 armhf; do
        t0=$(date +%s%N)
        RTLAT_KMOD_CACHE=$CACHE "$REPO/scripts/kmod-build.sh" --debian $a --out "$OUT/kmod-$a" \
            > "$OUT/kmod-build-$a.log" 2>&1 || {
            cat "$OUT/kmod-build-$a.log" >&2
            die "$a: the responder module did not cross-build without warnings"
        }
        file "$OUT/kmod-$a/rtlat_responder.ko" | grep -q "$([ $a = arm64 ] && echo aarch64 || echo 'ARM, EABI5')" ||
            die "$a: $OUT/kmod-$a/rtlat_responder.ko is not an $a object: $(file -b "$OUT/kmod-$a/rtlat_responder.ko")"
        log "$a: cross-built rtlat_responder.ko ($(grep -o 'against .*' "$OUT/kmod-build-$a.log")) in $((($(date +%s%N) - t0) / 1000000)) ms"
    done
}

responder_into() { # flavour root
    # Where DKMS put it, as on an installed board.
    mkdir -p "$2/lib/modules"
    cp -r "$OUT/dkms-$1/lib/modules/$KABI-$1" "$2/lib/modules/"
    cp "$REPO/tests/fixtures/irq/guest-kmod.sh" "$2/lib/guest-kmod.sh"
    cp "$OUT/fastgpio-$1/rtlat_fastgpio.ko" "$2/lib/"
}

check_responder() {
    python3 "$REPO/tests/fixtures/irq/check-responder.py" "$1" "$OUT/console-$1.log" "$KMOD_EDGES" \
        "$REPO/docs/result-schema.json" "$OUT"
}
