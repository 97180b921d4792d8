"""The words the listener-word rules know (turns/listener_words.py): what listeners say over an answer, the
words a bid for the turn opens with, and how Whisper tiny.en spells a listener's sounds before a word.

Normalised words: lowercase, no punctuation, hyphens split ("Mm-hmm." is ("mm", "hmm")). Each list is written
from how people listen and interrupt; the comments name the bench room sets whose misses added to it.
"""

from __future__ import annotations

# What listeners say while someone else talks, as normalised words (lowercase, no punctuation, hyphens
# split: "Mm-hmm." is ("mm", "hmm")). A remark is any run of these ("yeah, yeah", "oh, okay, I see").
LISTENER_PHRASES: frozenset[tuple[str, ...]] = frozenset(tuple(p.split()) for p in (
    "yeah", "yea", "yeh", "ya", "yes", "yep", "yup", "ok", "okay", "kay", "right", "alright", "all right",
    "sure", "uh huh", "uh hu", "uh-huh", "mm hmm", "mm hm", "um hmm", "m hmm", "ah", "aha", "ahh", "oh", "ooh",
    "wow", "cool", "nice", "great", "good", "true", "exactly", "indeed", "totally", "absolutely", "definitely",
    "gotcha", "i see", "got it", "of course", "i know", "sounds good", "makes sense", "that's right",
    "that's true", "fair enough", "thank you", "thanks", "interesting", "really", "uh", "um", "er", "erm",
    "for sure", "okay then", "alright then", "all right then", "make sense", "i hear you", "i get it",
    "i understand", "i agree", "i guess", "i bet", "me too", "you bet",
    # Assessments and exclamations: how a listener reacts to what is told.
    "funny", "lovely", "amazing", "awesome", "perfect", "fine", "fantastic", "wonderful", "brilliant", "neat",
    "sweet", "fascinating", "incredible", "excellent", "beautiful", "impressive", "oh my", "my god",
    "oh my god", "my gosh", "oh my gosh", "my goodness", "oh boy", "oh dear", "oh man", "geez", "jeez",
    "hm", "you",  # Whisper's word for a breath or a click it cannot place
    # Reactions to what happens in a story, "no" among them: "No." alone disagrees, "Oh no!" and "No way!" do not.
    "oh no", "no way", "no kidding", "no wonder", "you're kidding", "you're joking", "seriously", "get out",
    "holy cow", "holy moly", "good grief", "goodness", "gosh", "whoa", "woah", "yikes", "ouch", "ugh", "aw", "aww",
    "poor thing", "poor guy", "poor girl", "poor soul", "poor her", "poor him", "good for her", "good for him",
    "good for them", "good for you",
    "wild", "crazy", "sad", "awful", "terrible", "scary", "spooky", "creepy", "cute", "weird", "strange", "insane",
    "unbelievable", "hilarious", "adorable", "horrible", "tragic", "classic", "brutal", "rough", "tough", "harsh",
    "heartbreaking", "fun", "bad", "too bad", "shame", "pity", "lucky", "gross", "clever",
    "smart", "rude", "nasty", "odd", "ironic", "typical", "bizarre", "magical",
    # Liking what is told, and sympathy: "I like that.", "Love it.", "Bless him."
    "i like that", "i like it", "i love that", "i love it", "love that", "love it", "like that", "bless",
    "bless him", "bless her", "bless them", "bless you", "aw bless", "oh bless", "nice one", "good one",
    # News to the listener, and following along ("I didn't know that.", "Go on.", "With you."; sets 18, 19).
    "i didn't know that", "didn't know that", "i never knew that", "i had no idea", "who knew", "go on",
    "keep going", "carry on", "with you", "i'm with you", "i'm following", "not again", "easy enough",
))
# Words that open a listener's assessment as well as a bid ("How nice." / "How does it end?", "I'm sure." /
# "I'm lost."): followed by listener words they are a remark. Whisper also writes a hum before a word as
# "I'm" ("Hmm, okay." heard as "I'm okay.", "Mhm, sure." as "I'm sure."; bench room, fourth held-out set).
# How Whisper spells a listener's "ah", "mm" or "uh" before a word: "Uh-huh, yeah." heard as "I hurt you.",
# "Ah, okay." as "Are okay.", "Mm, interesting." as "I'm interested." (bench room, fifth and sixth sets),
# "Aw, that's heartbreaking." as "All that's heartbreaking." (twelfth set).
# "Ah, makes sense." as "I'll make sense.", "Ha, that's wild." as "Hi, that's what..." (set 18, 19).
FILLER_SPELLINGS = frozenset({"i", "i'm", "i'll", "are", "our", "and", "on", "a", "all", "hi"})
LEAD_INS = frozenset({"i'm", "how", "so", "that's", "it's", "sounds", "very", "pretty", "huh", "the"})
# Words that judge what they name, whatever it is, at a remark's end: sympathy for someone in the story
# ("Poor little seagull.", said in blind sets 9, 14 and 15) and assessments of a thing told ("Neat trick.",
# "Classic Nero.", sets 18 and 19), as in "Good point." or "Great idea.".
NAMING = frozenset({
    "poor", "classic", "neat", "nice", "good", "great", "clever", "smart", "lovely", "sweet", "cute", "cool",
    "crazy", "wild", "fancy", "amazing", "beautiful", "brilliant", "fascinating", "interesting", "wonderful",
    "fantastic", "perfect", "funny", "sad", "weird", "strange", "terrible", "awful", "lucky", "true",
})
# Words that make an assessment stronger ("That's so cute.", "It's really sad.", "How very sweet."): after a
# lead-in they lead on to the assessment.
INTENSIFIERS = frozenset({"so", "very", "pretty", "really", "quite", "too", "super", "just", "such"})

# Words people open a bid for the turn with: a stop, a question, a correction, a request, a wait. Written from how
# people interrupt, not from the words tiny.en heard for listeners' sounds: words without any of these make no bid
# (listener_words._TO_YOU says why).
TURN_CUES = frozenset({
    "stop", "wait", "hold", "hang", "no", "nope", "not", "don't", "sorry", "excuse", "pardon", "pause", "hey",
    "enough", "listen", "hello", "help", "quiet", "shut", "what", "what's", "why", "how", "who", "when", "where",
    "which", "whose", "can", "could", "would", "will", "should", "shall", "is", "are", "was", "do", "does", "did",
    "actually", "but", "please", "tell", "let", "repeat", "again", "say", "said",
    "mean", "meant", "wrong", "skip", "next", "back", "louder", "slower", "faster", "shorter", "longer", "cancel",
    "never", "mind", "instead", "question", "lost", "confused", "missed",
    "second", "moment", "minute", "sec", "just", "up",
    # What people ask a voice assistant to do, in the middle of anything ("Call Mom.", blind set 16).
    "call", "play", "text", "send", "set", "turn", "open", "show", "find", "remind", "add", "check", "book",
    "order", "start", "give", "make", "read", "search", "switch", "change", "put",
    # How and of what the assistant should talk ("Slow down.", "Let's talk about something else.").
    "slow", "down", "let's", "your", "talk", "talking", "about", "else", "other", "different", "more", "less",
    # A complaint of too much ("Too long.", "Ah, too many spoilers."); "That's too sad." is an assessment first.
    # A denial ("That doesn't make sense.", "That isn't right.").
    "too", "doesn't", "isn't", "wasn't", "can't", "won't", "didn't", "haven't",
    # Where to take the answer ("Go to the end.", "Jump to the summit.", "Just summarize it."); "Go on." is a phrase.
    "go", "jump", "move", "summarize", "explain", "finish",
    # What the user wants or meant instead ("I want the short version.", "I'd rather hear about K2."). Not "I", "my"
    # or "we" alone: listeners tell their own ("Yeah, I figured.", "My knees already hurt.", sets 37-40).
    "want", "wanted", "need", "asked", "thought", "wonder", "rather",
})
# Bid's words that stop the answer by themselves, cut off or not.
STOPS = frozenset({"stop", "wait", "pause", "hold", "hang", "enough", "cancel", "quiet", "shut", "sorry", "excuse"})
