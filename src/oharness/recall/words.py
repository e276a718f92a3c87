"""Curated word lists for recall: stop words per language and a background list of common words.

Stop words never score (spec 03.2). English is always active, because technical writing
mixes English into every language; the other lists apply only when their language is
in ``memory.recall.languages`` - otherwise their words still score, as the most common words
do, because some are real words elsewhere ("die", "son", "pour"). Languages with a Snowball
stemmer but no list here are stemmed without stop words. The lists are compared with
case-folded surface words, before stemming.

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
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other ought our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up us very was we were what when
    where which while who whom why will with would you your yours yourself yourselves s t d ll m re
    ve o y don didn doesn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn mustn shan
    needn let hi hey hello yes yeah yep ok okay oh um uh hmm lol please thanks thank really
    actually maybe well anyway still even though got get gets getting going gonna wanna whether yet
    etc via e.g i.e one ones
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
    bonjour salut merci oui non alors donc car comme si plus moins peu bien fait faire va vais
    vas vont allez allons faut peut peux veux voilà
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
    de en van ik te dat die in een hij het niet zijn is was op aan met als voor had er maar om hem
    dan zou of wat mijn men dit zo door over ze zich bij ook tot je mij uit der daar haar naar heb
    hoe heeft hebben deze u want nog zal me zij nu ge geen omdat iets worden toch al waren veel
    meer doen toen moet ben zonder kan hun dus alles onder ja eens hier wie werd altijd doch wordt
    wezen kunnen ons zelf tegen na reeds wil kon niets uw iemand geweest andere hallo dank bedankt
    """
)

HINDI_STOP: Final = _words(
    """
    है हैं था थे थी का की के में और से को यह वह ये वो नहीं न पर भी तो ही एक हो कर करना
    करें क्या कि जो मैं मुझे मेरा मेरी आप आपका आपकी हम तुम इस उस इसे उसे कुछ बहुत अब जब तक
    लिए साथ गया गई रहा रही नमस्ते धन्यवाद शुक्रिया ठीक हाँ हां जी अच्छा बढ़िया शुभ रात्रि
    सुप्रभात कल आज फिर
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
    "hindi": HINDI_STOP,
}

#: Thai particles that are whole pairs or lone letters: never scored. Always active.
UNSPACED_STOP: Final = _words("นะ ค่ะ คะ จ้ะ จ้า ครับ")

#: Everyday Thai words: their letter pairs are treated like the most common words (a prior,
#: not stop words), so small talk in Thai does not look distinctive.
UNSPACED_COMMON: Final = _words(
    """
    ครับ ค่ะ คะ นะ ที่ และ ได้ ไม่ เป็น มี ใน ของ จะ ให้ กับ ว่า แล้ว ก็ นี้ หน่อย ขอบคุณ สวัสดี
    โอเค มาก ช่วย อะไร ยัง ทำ ไป มา อยู่ ตอนนี้ วันนี้ พอ แค่ ก่อน เลย ด้วย อธิบาย
    """
)

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
    thing things time times way ways day days make makes made making go goes went gone know knew
    known think thought want wanted need needed like liked good great nice new old right see saw
    seen look looked come came take took give gave say said tell told use used using one two first
    last lot lots much many little big back also today now something anything everything someone
    people person work working worked try tried sure fine cool awesome bad better best feel felt
    love loved happy glad sorry wow haha yay hope
    """
)

#: The words of a coding session about its own work: what a user says of the code at hand in
#: message after message ("run the tests again", "review the changes in this file", "the
#: output of line 12", "fix the message"). In messages they are as common as the most common
#: words, whatever share of the notes holds them, so they weigh as those do (prior share:
#: high): they complete a topic other words name, never name one in pairs. Words that name a
#: topic a team writes notes on ("error", "bug", "deploy", "build") are not in the list.
SESSION_WORDS: Final = _words(
    """
    change changes changed changing file files line lines code test tests testing tested run runs
    running output message messages review reviews reviewed fix fixes fixed
    """
)

#: Everyday words, including the everyday vocabulary of software work (prior share: medium).
COMMON_WORDS: Final = _words(
    """
    ability able accept account across act action active activity add added address admit adult
    affect afraid after afternoon age agency agent ago agree ahead air allow almost alone along
    already alright although always amazing among amount analysis animal another answer anybody
    anymore anyone anything anyway anywhere appear apply approach area argue arm around arrive art
    article ask asked assume attack attention attempt available avoid awake aware away awful baby
    back background bad bag ball bank bar base basic basically beat beautiful become bed began
    begin beginning behind believe belong benefit beside best better beyond big bill bit black blue
    board boat body book bored boring born borrow boss bother bottom box boy brain break breakfast
    bring broke broken brother brought brown build building built burn bus business busy buy call
    calm came camera can't car card care careful carry case catch cause center centre certain
    certainly chair chance change changed character charge cheap check child children choice choose
    chose church city claim class clean clear clearer clearly click close closed clothes club
    coffee cold collect college colour color come comes coming comment common company complete
    completely computer concern condition consider contain continue control cook cool copy corner
    correct cost couple course cover crazy create crowd cry culture cup current currently customer
    cut cute dad daily damage dance dark date daughter dead deal dear death decide decision deep
    definitely degree depend describe detail details develop did die difference different difficult
    dinner direction directly discover discuss disease doctor does dog done door double doubt down
    draw dream dress drink drive drop dry during early earn easily east easy eat economy edge
    effect effort either else email end energy enjoy enough enter entire environment equal
    especially even evening event ever every everybody everyone everything everywhere exactly
    example excellent except excited exciting exercise expect expensive experience explain
    explanation eye face fact fail fair fall false family famous fan fantastic far farm fast father
    fault favorite favourite fear feature feed feel feeling feet fellow felt few field fight figure
    fill film final finally find fine finger finish fire firm fish fit fix fixed floor fly focus
    folk follow food foot force forget forgot form forward free fresh friend friendly front fruit
    full fun funny future game garden gave general generally gift girl give given glad glass goal
    god gold gone good goodbye great green ground group grow guess guy hair half hall hand handle
    hang happen happened happy hard hate head health hear heard heart heat heavy hello help helpful
    here high hill hire history hit hold hole holiday home honest hope horrible hospital hot hotel
    hour house huge human hungry hurry hurt husband ice idea ignore ill image imagine important
    improve include including increase indeed individual industry information inside instead
    interest interested interesting introduce involve island issue item job join joke journey judge
    jump keep kept key kid kids kill kind king kitchen knew knock know knowledge lady lake land
    language large last late later laugh law lay lead learn least leave leg less lesson let letter
    level lie life light likely limit line list listen little live local lock long look loose lose
    loss lost lot loud love lovely low luck lucky lunch machine mad main major make man manage
    manager many map mark market married matter maybe meal mean meaning meant measure meet meeting
    member memory mention mess message met method middle might mind mine minute miss missing
    mistake model modern mom moment money month mood morning mostly mother mountain mouth move
    movie much music must myself name nation natural nature near nearly necessary neck need
    neighbor neither nervous network never news next nice night nobody noise none normal north nose
    nothing notice number nurse object obvious obviously occur offer office officer often oil old
    once online open opinion opportunity order ordinary original others otherwise outside page pain
    paint pair paper parent park part particular particularly partner party pass past path pay
    peace pen people perfect perfectly perhaps period person personal phone pick picture piece
    place plan plant play player pleasant pleased plenty pocket point police policy polite poor
    popular position positive possible possibly post pound power practice prefer prepare present
    pretty prevent price print private probably problem process produce product professional
    program promise proper properly protect proud prove provide public pull purpose push put
    quality quarter queen question quick quickly quiet quite race rain raise range rate rather
    reach read ready real reality realize realise really reason receive recent recently recognize
    recommend record red reduce relationship remain remember remove repeat reply report request
    require rest restaurant result return rich ride right ring rise risk river road rock role room
    rough round rule rush sad safe said sale salt same save saw say scared scene school science
    score sea season seat second secret section see seem seen sell send sense sentence separate
    serious seriously serve service session set several shape share sharp shoe shop short shot
    shoulder shout show shut sick side sign significant silly similar simple simply since sing
    single sister site situation size skill skin sleep slightly slow slowly small smart smell smile
    snow social society soft solution solve somebody somehow someone something sometimes somewhere
    son song soon sorry sort sound source south space speak special speech speed spend spent spot
    spring staff stage stand standard star start state station stay step stick still stone stop
    store story straight strange street strength stress strong student study stuff stupid style
    subject success successful suddenly suggest summer sun supply support suppose sure surprise
    surprised sweet table take taken talk tall task taste tea teach teacher team tear tell term
    terrible test text than thank themselves thing think third though thought throw ticket tie till
    time tiny tired title today together told tomorrow tonight took top total touch tough toward
    towards town track trade traffic train travel treat tree trip trouble true trust truth try turn
    twice type typical ugly uncle under understand unit university unless unusual upon upset use
    useful user usual usually value various version view village visit voice wait wake walk wall
    want war warm warn wash watch water wave way weak wear weather week weekend weird welcome west
    wet whatever whenever white whole wide wife wild win window winter wish within without woman
    wonder wonderful wood word work worker world worried worry worse worst worth write writing
    wrong wrote yard year yellow yesterday young yourself youth zero one two three four five six
    seven eight nine ten hundred thousand million half first second third monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september
    october november december autumn spring summer winter photo pictures vacation trip weekend
    hobby hobbies kids bug bugs error errors code file files folder function functions variable
    variables value values data option options setting settings test tests testing run running
    build builds fix fixes update updates change changes project projects version step steps issue
    issues line lines page pages list note notes example detail details result results output input
    command commands script scripts tool tools program app application screen button link click
    review feature features thing stuff rename summarise summarize explain approach simpler clean
    cleanup refactor improve improvement question answer problem wrong working broken message
    messages warning warnings doc docs document documentation comment comments name names format
    number numbers word words text string strings call calls
    """
)

#: Chinese pairs that are everyday vocabulary rather than a topic.
CJK_COMMON: Final = _words(
    """
    今天 明天 昨天 现在 时候 知道 觉得 需要 问题 东西 事情 时间 工作 大家 喜欢 希望 应该 看看
    一起 可能 非常 真的 好的 好像 感觉 朋友 已经 以后 之前 之后 开始 继续 今日 明日 昨日 時間
    """
)

#: Words of code, logs, stack traces and git: pasted output and everyday instructions are full
#: of them, so they weigh like
#: everyday words (prior share: medium) rather than like rare topical words.
CODE_WORDS: Final = _words(
    """
    id ids self null nil undefined def import imports module modules int str bool dict args kwargs
    param params init util utils lib src bin tmp usr exception exceptions traceback stack node
    internal loader index argument arguments required positional attribute syntax parse parsing
    failed passed exit status found log logs panic thread core dumped permission denied fatal
    origin async await const var func fn stdout stderr errno commit commits merge merged merging
    branch branches push pushed pull rebase repo repository diff lint linter ship shipped shipping
    pr prs lgtm wip todo fixme typo typos refactor rename git
    """
)

#: English irregular forms Snowball leaves apart from their base ("broke" and "break"): a base
#: word and its forms, group after group.
_IRREGULAR: Final = """
    be was were been being; begin began begun; break broke broken; bring brought; build built; buy
    bought; catch caught; choose chose chosen; come came; do did done; draw drew drawn; drink
    drank drunk; drive drove driven; eat ate eaten; fall fell fallen; feel felt; fight fought;
    find found; fly flew flown; forget forgot forgotten; give gave given; go went gone; grow grew
    grown; hold held; keep kept; know knew known; leave left; lose lost; make made; meet met; pay
    paid; ride rode ridden; run ran; see saw seen; sell sold; send sent; sing sang sung; speak
    spoke spoken; spend spent; swim swam swum; take took taken; teach taught; tell told; think
    thought; throw threw thrown; win won; write wrote written; child children; mouse mice; foot
    feet; tooth teeth; person people; woman women; man men
"""
IRREGULAR_ENGLISH: Final = {
    form: base for base, *forms in map(str.split, _IRREGULAR.split(";")) for form in forms
}

#: British spellings and their American form, applied before stemming with an English stemmer
#: so both spellings meet (``colour`` and ``color``, ``organise`` and ``organize``). Listed
#: words only, with their usual inflections; the ``-ise``/``-yse`` verbs follow
#: :data:`BRITISH_ISE` instead.
BRITISH_SPELLING: Final = {
    british: american
    for stems, (old, new), endings in (
        (
            "colour flavour behaviour favour honour labour neighbour humour harbour rumour "
            "savour vapour armour endeavour odour rigour vigour",
            ("our", "or"),
            ("", "s", "ed", "ing", "ful", "ite", "ites", "able", "less", "hood", "er", "ers"),
        ),
        ("centre theatre metre litre fibre calibre", ("re", "er"), ("", "s", "d")),
        ("licence defence offence pretence", ("ce", "se"), ("", "s", "d")),
        ("catalogue dialogue analogue", ("ue", ""), ("", "s", "d")),
        (
            "travell cancell modell labell levell fuell signall channell counsell totall",
            ("ll", "l"),
            ("ed", "ing", "er", "ers"),
        ),
    )
    for stem in stems.split()
    for ending in endings
    for british, american in [(stem + ending, stem[: -len(old)] + new + ending)]
} | {
    "grey": "gray",
    "greys": "grays",
    "programme": "program",
    "programmes": "programs",
    "aluminium": "aluminum",
    "mould": "mold",
    "moulds": "molds",
    "sceptical": "skeptical",
    "jewellery": "jewelry",
    "cheque": "check",
    "cheques": "checks",
    "tyre": "tire",
    "tyres": "tires",
}
#: ``organise``, ``organised``, ``organising``, ``organisation``, ``analyse``... : the ``s`` of
#: these endings is read as ``z`` (both spellings meet; words like ``promise`` only meet
#: themselves).
BRITISH_ISE: Final = r"(?<=[a-z]{3})(is|ys)(?=(?:e|es|ed|ing|ation|ations|er|ers|able)$)"
