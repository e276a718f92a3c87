"""Curated word lists for recall: stop words per language and a background list of common words.

Stop words never score (spec 03.2). English is always active, because messages to a coding
assistant mix English into every language; the other lists apply only when their language is
in ``memory.recall.languages``. Languages with a Snowball stemmer but no list here are stemmed
without stop words. The lists are compared with case-folded surface words, before stemming.

Because the tokeniser splits words at apostrophes, the English list holds contraction pieces
(``don``, ``ll``, ``ve``...) and the French one elided articles (``l``, ``qu``...).

The common-word lists are not stop words: they are a prior for how many notes a word appears
in (see :mod:`oharness.recall.score`), so that a small index - where every word looks rare -
still treats "weekend" or "thanks" as weaker evidence than "kubernetes".
"""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH_STOP: Final = _words(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can cannot could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    ought our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up us
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves s t d ll m re ve o y don didn doesn isn aren wasn weren hasn haven hadn
    won wouldn shouldn couldn mustn shan needn let hi hey hello yes yeah yep ok okay oh um uh
    hmm lol please thanks thank really actually maybe well anyway still even though got get
    gets getting going gonna wanna whether yet etc via e.g i.e
    """
)

FRENCH_STOP: Final = _words(
    """
    au aux avec ce ces dans de des du elle en et eux il je la le leur lui ma mais me même mes
    moi mon ne nos notre nous on ou où par pas pour qu que qui sa se ses son sur ta te tes toi
    ton tu un une vos votre vous c d j l à m n s t y été étée étées étés étant suis es est
    sommes êtes sont serai seras sera serons serez seront serais serait serions seriez
    seraient étais était étions étiez étaient fus fut fûmes fûtes furent sois soit soyons soyez
    soient ayant eu eue eues eus ai as avons avez ont aurai auras aura aurons aurez auront
    aurais aurait aurions auriez auraient avais avait avions aviez avaient ceci cela cet cette
    ici ils les leurs quel quels quelle quelles sans soi ça très aussi tout tous toute toutes
    bonjour salut merci oui non alors donc car comme si plus moins peu bien fait faire
    """
)

GERMAN_STOP: Final = _words(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes auch auf aus bei bin bis bist da damit dann der den des dem die das dass daß du er
    es ein eine einem einen einer eines für hatte hatten hier hin hinter ich ihr ihre im in ist
    ja jede jedem jeden jeder jedes jetzt kann kein keine keinem keinen keiner man mein meine
    meinem meinen meiner mich mir mit muss musste nach nicht nichts noch nun nur ob oder ohne
    sehr sein seine seinem seinen seiner selbst sich sie ihnen sind so soll sollte sondern
    sonst über um und uns unsere unser unter viel vom von vor war waren was weil weiter welche
    wenn werde werden wie wieder will wir wird wo wollen wollte würde würden zu zum zur zwar
    zwischen hallo danke bitte
    """
)

SPANISH_STOP: Final = _words(
    """
    de la que el en y a los del se las por un para con no una su al lo como más pero sus le ya
    o este sí porque esta entre cuando muy sin sobre también me hasta hay donde quien desde
    todo nos durante todos uno les ni contra otros ese eso ante ellos e esto mí antes algunos
    qué unos yo otro otras otra él tanto esa estos mucho quienes nada muchos cual poco ella
    estar estas algunas algo nosotros mi mis tú te ti tu tus ellas es son fue era ser hola
    gracias
    """
)

ITALIAN_STOP: Final = _words(
    """
    ad al allo ai agli all alla alle con col coi da dal dallo dai dagli dall dalla dalle di del
    dello dei degli dell della delle in nel nello nei negli nell nella nelle su sul sullo sui
    sugli sull sulla sulle per tra contro io tu lui lei noi voi loro mio mia miei mie tuo tua
    suo sua nostro vostro ci vi ne il lo la le gli un uno una ma ed se perché anche come dov
    dove che chi cui non più quale quanto quello questo si è sono era ho ha hanno ciao grazie
    """
)

PORTUGUESE_STOP: Final = _words(
    """
    de a o que e do da em um para com não uma os no se na por mais as dos como mas ao ele das
    à seu sua ou quando muito nos já eu também só pelo pela até isso ela entre depois sem mesmo
    aos seus quem nas me esse eles você essa num nem suas meu minha numa pelos elas qual nós
    lhe deles essas esses pelas este dele tu te vocês vos lhes meus minhas teu tua nossa
    nosso é são foi era ser olá obrigado obrigada
    """
)

DUTCH_STOP: Final = _words(
    """
    de en van ik te dat die in een hij het niet zijn is was op aan met als voor had er maar om
    hem dan zou of wat mijn men dit zo door over ze zich bij ook tot je mij uit der daar haar
    naar heb hoe heeft hebben deze u want nog zal me zij nu ge geen omdat iets worden toch al
    waren veel meer doen toen moet ben zonder kan hun dus alles onder ja eens hier wie werd
    altijd doch wordt wezen kunnen ons zelf tegen na reeds wil kon niets uw iemand geweest
    andere hallo dank bedankt
    """
)

STOP_WORDS: Final[dict[str, frozenset[str]]] = {
    "english": ENGLISH_STOP,
    "porter": ENGLISH_STOP,
    "french": FRENCH_STOP,
    "german": GERMAN_STOP,
    "spanish": SPANISH_STOP,
    "italian": ITALIAN_STOP,
    "portuguese": PORTUGUESE_STOP,
    "dutch": DUTCH_STOP,
    "dutch_porter": DUTCH_STOP,
}

#: Lone CJK characters and pairs that carry grammar, not topic. Always active.
CJK_STOP: Final = _words(
    """
    的 了 是 在 我 你 他 她 它 们 这 那 和 与 也 都 就 吗 呢 吧 啊 不 有 个 一 很 还 被 把 给 从
    对 到 说 要 会 能 去 来 上 下 中 之 其 或 及 等 着 过 得 地 么 嗎
    我们 你们 他们 她们 它们 这个 那个 什么 怎么 一个 没有 可以 就是 不是 因为 所以 但是 如果
    已经 还是 这样 那样 那么 然后 自己 一下 一些 这些 那些 的话 还有 而且 或者 以及 为了 关于
    谢谢 你好 请问
    の は が を に で と も や へ か な ね よ わ て た だ し
    です ます でし まし する した して いる ある あり この その あの これ それ あれ ここ そこ
    こと もの よう ため から まで など ので けど でも って とい いう ござ ざい あり りが がと
    とう こん んに にち ちは
    은 는 이 가 을 를 에 의 와 과 도 로 요
    """
)

#: Words found in a large share of any text collection (prior share of notes: high).
VERY_COMMON_WORDS: Final = _words(
    """
    thing things time times way ways day days make makes made making go goes went gone know
    knew known think thought want wanted need needed like liked good great nice new old right
    see saw seen look looked come came take took give gave say said tell told use used using
    one two first last lot lots much many little big back also today now something anything
    everything someone people person work working worked try tried sure fine cool awesome
    bad better best feel felt love loved happy glad sorry wow haha yay hope
    """
)

#: Everyday words, including the everyday vocabulary of software work (prior share: medium).
COMMON_WORDS: Final = _words(
    """
    find found call called ask asked feel seem help helped talk talked turn start started show
    showed hear heard play played run running ran move moved live lived believe hold bring
    happen happened write wrote written read sit stand lose lost pay paid meet met include
    continue set learn learned change changed lead understand watch follow stop create speak
    allow add added spend grow open walk win offer remember consider appear buy wait serve
    send expect build built stay fall cut reach remain suggest raise pass sell require report
    decide pull push check fix fixed update updated done do doing keep kept leave left put mean
    means meant begin began plan planned share shared visit visited enjoy enjoyed miss missed
    year years week weeks month months hour hours minute minutes moment morning afternoon
    evening night tonight tomorrow yesterday weekend monday tuesday wednesday thursday friday
    saturday sunday january february march april may june july august september october
    november december spring summer autumn fall winter home house family friend friends kid
    kids child children mom dad mother father wife husband life world place part case point
    question questions problem problems idea ideas reason fact kind sort story name number
    group team company business job money game book books car city country school water food
    music photo picture place area side end hand head eye face body word words line lines
    page pages list note notes example information info detail details version step steps
    issue issues bug bugs error errors code file files test tests project projects system
    function data value values type types thing result results option options setting
    settings different same small large long short high low next early late easy hard real
    free full whole important possible able available simple quick quickly again always never
    often sometimes usually probably already almost enough quite pretty super totally
    definitely especially exactly though although instead since around away together another
    every each other others own else ever far less least last later soon yet recently
    currently finally interesting amazing beautiful fun funny excited exciting tough busy
    tired lovely wonderful fantastic incredible proud support supportive chat talk
    """
)

#: Chinese pairs that are everyday vocabulary rather than a topic.
CJK_COMMON: Final = _words(
    """
    今天 明天 昨天 现在 时候 知道 觉得 需要 问题 东西 事情 时间 工作 大家 喜欢 希望 应该 看看
    一起 可能 非常 真的 好的 好像 感觉 朋友 已经 以后 之前 之后 开始 继续 今日 明日 昨日 時間
    """
)
