"""General-knowledge questions that no technical or scientific corpus should answer.

Used to measure refusal: asked of an indexed corpus, each should be refused.
Written for this project; half English, half Chinese.
"""

OFF_TOPIC_QUESTIONS = (
    "What is the capital city of Australia?",
    "How do I bake a sourdough loaf at home?",
    "Who won the football World Cup in 1998?",
    "What is a good name for a golden retriever puppy?",
    "How many strings does a standard violin have?",
    "What time does the Louvre open on Sundays?",
    "Which planet has the most moons?",
    "How do you knit a scarf for beginners?",
    "What is the best way to remove a red wine stain from a carpet?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What are the rules of cricket's lbw law?",
    "How long should I boil an egg for a soft yolk?",
    "澳大利亚的首都是哪个城市？",
    "怎样在家里烤面包？",
    "1998年世界杯的冠军是哪支球队？",
    "给金毛小狗起什么名字好？",
    "小提琴有几根弦？",
    "哪颗行星的卫星最多？",
    "怎样去除地毯上的红酒渍？",
    "西斯廷教堂的天顶画是谁画的？",
    "煮溏心蛋需要多长时间？",
    "初学者怎样织围巾？",
    "卢浮宫星期天几点开门？",
    "板球的规则是什么？",
)
