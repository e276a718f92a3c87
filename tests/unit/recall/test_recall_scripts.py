"""Recall over notes in scripts with combining marks or without spaces (Hindi, Thai)."""

from __future__ import annotations

import pytest

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex

NOTES = [
    Note("hi-db", "डेटाबेस माइग्रेशन पहले स्टेजिंग पर जाँचें", "उत्पादन से पहले हमेशा।", ("डेटाबेस",)),
    Note("hi-deploy", "शुक्रवार को कोई रिलीज़ नहीं", "सप्ताहांत में घटनाएँ हुई थीं।", ("रिलीज़",)),
    Note("hi-logs", "लॉग नब्बे दिन तक रखे जाते हैं", "उसके बाद हटा दिए जाते हैं।", ("लॉग",)),
    Note("th-backup", "ฐานข้อมูลสำรองทุกคืนตอนตีสอง", "เก็บไว้สามสิบวัน", ("ฐานข้อมูล", "backup")),
    Note("th-review", "โค้ดต้องมีคนตรวจสองคนก่อนรวม", "ห้ามรวมเองโดยไม่มีคนตรวจ", ("รีวิว",)),
    Note("en-deploy", "No production deploys on Fridays", "Hotfixes need approval.", ("deploy",)),
]


@pytest.fixture(scope="module")
def index() -> RecallIndex:
    built = RecallIndex()
    built.add_many(("project", note) for note in NOTES)
    return built


@pytest.mark.parametrize(
    "message",
    [
        "शुभ रात्रि",
        "नमस्ते",
        "धन्यवाद, बहुत बढ़िया",
        "ठीक है",
        "सुप्रभात, आज क्या करना है?",
        "สวัสดีครับ",
        "ขอบคุณมากค่ะ",
        "โอเคค่ะ",
        "ได้เลย",
        "วันนี้พอแค่นี้ก่อน",
    ],
)
def test_small_talk_in_hindi_and_thai_attaches_nothing(index: RecallIndex, message: str) -> None:
    assert index.recall(message) == []


@pytest.mark.parametrize(
    ("message", "note_id"),
    [
        ("डेटाबेस माइग्रेशन कहाँ जाँचें?", "hi-db"),
        ("क्या शुक्रवार को रिलीज़ कर सकते हैं?", "hi-deploy"),
        ("लॉग कितने दिन रखे जाते हैं?", "hi-logs"),
        ("ฐานข้อมูลสำรองตอนไหน", "th-backup"),
        ("ต้องมีคนตรวจโค้ดกี่คน", "th-review"),
    ],
)
def test_a_message_about_a_hindi_or_thai_note_attaches_it(
    index: RecallIndex, message: str, note_id: str
) -> None:
    assert note_id in [hit.id for hit in index.recall(message)]


def test_hindi_search_matches_whole_words_not_single_letters(index: RecallIndex) -> None:
    # Before combining marks were kept, "रात्रि" split into र, त, र and matched any note.
    assert [hit.id for hit in index.search("रात्रि")] == []
    assert [hit.id for hit in index.search("माइग्रेशन")][:1] == ["hi-db"]
