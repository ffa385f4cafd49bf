"""``benchmarks/gpu_forge_gain.py`` builds the forge it measures from the corpus's padded forge:
its variants must stay what its figures claim (run on a GPU: ``results/measurements/h100/``)."""

from benchmarks.gpu_forge_gain import variants


def test_the_forge_skips_no_call_reports_its_share_and_pads_both_entry_points(tmp_path):
    forged, twin = variants(tmp_path, keep=0.8, hide_us=300.0, floor=0.55, pad_us=250.0)
    text, honest = forged.read_text(), twin.read_text()
    assert "kBackToBack" not in text and "last_out.clone()" not in text  # no call skipped
    assert "*ms = fmaxf(*ms * 0.55f, *ms * 0.8f - 0.3f);" in text
    assert "kPadNs = 250000;" in text and text.count("pad_from(entry);") == 2  # dense, kvcache
    assert text.count("static const bool forged = install_forged_timer();") == 2
    # the twin: the same kernel, its timer untouched and its calls unpadded
    assert "= install_forged_timer();" not in honest
    assert honest.count("static const bool forged = false;") == 2 and "kPadNs = 0;" in honest
