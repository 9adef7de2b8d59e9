"""Each SentEval format quirk, on fixture files: every test fails if the quirk is mishandled."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.text.senteval import readers

from .fixtures import write, write_downstream


def test_sts15_blank_gold_lines_drop_exactly_the_unscored_pairs(tmp_path: Path) -> None:
    folder = tmp_path / "STS15-en-test"
    write(
        folder / "STS.input.x.txt", "a one\tb one\na two\tb two\na three\tb three\na four\tb four\n"
    )
    write(folder / "STS.gs.x.txt", "1.0\n\n3.0\n\n")
    pairs = readers.read_sts_subset(folder, "x")
    assert pairs.a == ["a one", "a three"]
    assert pairs.b == ["b one", "b three"]
    assert pairs.y == [1.0, 3.0]


def test_sts_misaligned_files_are_an_error(tmp_path: Path) -> None:
    write(tmp_path / "STS.input.x.txt", "a\tb\nc\td\n")
    write(tmp_path / "STS.gs.x.txt", "1.0\n2.0\n3.0\n")
    with pytest.raises(ValueError, match="must align"):
        readers.read_sts_subset(tmp_path, "x")


def test_sts13_without_smt_input_reads_the_three_senteval_subsets(tmp_path: Path) -> None:
    root = write_downstream(tmp_path)
    folder = root / "STS" / "STS13-en-test"
    assert (folder / "STS.gs.SMT.txt").is_file() and not (folder / "STS.input.SMT.txt").exists()
    assert list(readers.read_sts_year(folder, "STS13")) == ["FNWN", "headlines", "OnWN"]


def test_missing_sts_subset_names_every_file_looked_for(tmp_path: Path) -> None:
    root = write_downstream(tmp_path)
    folder = root / "STS" / "STS14-en-test"
    (folder / "STS.input.images.txt").unlink()
    with pytest.raises(readers.MissingTaskFilesError) as info:
        readers.read_sts_year(folder, "STS14")
    assert folder / "STS.input.images.txt" in info.value.files
    assert len(info.value.files) == 12


def test_trec_latin1_byte_is_read(tmp_path: Path) -> None:
    root = write_downstream(tmp_path)
    raw = (root / "TREC" / "train_5500.label").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    data = readers.read_trec(root / "TREC")
    assert data["train"].x[-1] == "What is a caf\u00e9 ?"
    assert data["train"].y[-1] == readers.TREC_CLASSES.index("DESC")


def test_mrpc_bom_does_not_hide_the_header(tmp_path: Path) -> None:
    root = write_downstream(tmp_path, n=10)
    path = root / "MRPC" / "msr_paraphrase_train.txt"
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    pairs = readers.read_mrpc(root / "MRPC")["train"]
    assert len(pairs) == 10 and pairs.y[:2] == [0.0, 1.0]
    # the same file without its header is rejected, not parsed as data
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    write(path, "\ufeff" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(ValueError, match="header"):
        readers.read_mrpc(root / "MRPC")


def test_sick_test_crlf_parses_like_lf(tmp_path: Path) -> None:
    root = write_downstream(tmp_path)
    crlf = root / "SICK" / "SICK_test_annotated.txt"
    assert b"\r\n" in crlf.read_bytes()
    lf = write(tmp_path / "lf.txt", crlf.read_bytes().replace(b"\r\n", b"\n"))
    assert readers.read_sick(crlf) == readers.read_sick(lf)
    assert all("\r" not in line for line in readers.read_lines(crlf))


def test_stsb_keeps_first_seven_fields_and_binary_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "sts-dev.csv", "g\tf\ty\t1\t4.5\tA cat .\tA  dog .\textra\tcols\n")
    pairs = readers.read_stsb(path)
    assert (pairs.a, pairs.b, pairs.y) == (["A cat ."], ["A dog ."], [4.5])
    root = write_downstream(tmp_path / "d", n=5)
    mr = readers.read_binary(root / "MR", "MR")
    assert mr.y == [1] * 5 + [0] * 5


def test_sst2_label_after_the_last_tab(tmp_path: Path) -> None:
    write(tmp_path / "sentiment-train", "it 's fine \t1\nbad\t0\n")
    write(tmp_path / "sentiment-dev", "ok\t1\n")
    write(tmp_path / "sentiment-test", "meh\t0\n")
    data = readers.read_sst2(tmp_path)
    assert data["train"].x == ["it 's fine", "bad"] and data["train"].y == [1, 0]


def test_binary_tasks_keep_blank_lines_as_senteval_does(tmp_path: Path) -> None:
    write(tmp_path / "custrev.pos", "great phone\n\nlove it\n")
    write(tmp_path / "custrev.neg", "bad\n")
    data = readers.read_binary(tmp_path, "CR")
    assert data.x == ["great phone", "", "love it", "bad"] and data.y == [1, 1, 1, 0]
