//! Normalised terms: one key for the abbreviations, spellings and translations of the everyday
//! nouns of software work, so that "MR" and "pull request", "pg" and "PostgreSQL", "k8s" and
//! "Kubernetes", "Datenbank" and "database", "テスト" and "test" name the same subject.
//!
//! This is general vocabulary, not per-topic knowledge: each entry is a thing engineers write
//! rules about, with the names it goes by in English (abbreviations included), German, French,
//! Spanish, Portuguese, Italian, Dutch, Chinese, Japanese and Korean. A few entries also name
//! the broader thing they are a kind of (PostgreSQL is a database), at low weight.

use std::collections::HashMap;
use std::sync::OnceLock;

/// (key, other names). Latin-script names are matched as whole lower-case words, before or after
/// light stemming; Han/katakana names anywhere inside a run of such characters; Hangul names at
/// the start of a word (Korean attaches particles).
#[rustfmt::skip]
const ENTRIES: &[(&str, &[&str])] = &[
    ("pr", &["prs", "mr", "mrs", "pull-request", "merge-request", "pull request", "pull requests", "merge request", "merge requests", "プルリクエスト", "プルリク", "合并请求", "拉取请求", "풀리퀘스트", "풀 리퀘스트"]),
    ("database", &["db", "dbs", "databases", "datenbank", "datenbanken", "bdd", "banco", "datenbankschema", "データベース", "数据库", "資料庫", "데이터베이스", "디비"]),
    ("postgres", &["postgresql", "pg", "psql", "ポスグレ"]),
    ("kubernetes", &["k8s", "kube", "クバネティス"]),
    ("e2e", &["end-to-end", "endtoend", "end to end", "browser tests", "browser test"]),
    ("integration-test", &["integration test", "integration tests", "integration suite", "integrationstest", "integrationstests", "結合テスト", "集成测试", "통합 테스트", "통합테스트"]),
    ("unit-test", &["unittest", "unittests", "unit-tests", "unit test", "unit tests", "単体テスト", "ユニットテスト", "单元测试", "단위 테스트", "단위테스트"]),
    ("foreign-key", &["fk", "fks", "foreign key", "foreign keys", "外键", "外部キー", "외래 키", "외래키"]),
    ("typescript", &["ts", "tsx"]),
    ("javascript", &["js", "jsx"]),
    ("python", &["py"]),
    ("environment", &["env", "envs", "environments", "umgebung", "entorno", "ambiente", "environnement", "環境", "环境", "환경"]),
    ("production", &["prod", "produktion", "producción", "produção", "produzione", "productie", "本番", "本番環境", "生产", "生产环境", "生產", "운영", "프로덕션"]),
    ("staging", &["ステージング", "预发", "스테이징"]),
    ("configuration", &["config", "configs", "cfg", "konfiguration", "configuración", "configuração", "configurazione", "設定", "配置", "설정"]),
    ("repository", &["repo", "repos", "repositories", "repositorio", "repositório", "dépôt", "リポジトリ", "仓库", "代码库", "저장소", "레포"]),
    ("dependency", &["dep", "deps", "dependencies", "abhängigkeit", "abhängigkeiten", "dependencia", "dependencias", "dépendance", "dépendances", "dependência", "dependências", "dipendenza", "dipendenze", "afhankelijkheid", "依存", "依存関係", "依赖", "의존성"]),
    ("library", &["lib", "libs", "libraries", "bibliothek", "biblioteca", "bibliotecas", "bibliothèque", "libreria", "ライブラリ", "库", "라이브러리"]),
    ("authentication", &["auth", "authn", "login", "sign-in", "signin", "anmeldung", "認証", "认证", "登录", "인증", "로그인"]),
    ("documentation", &["docs", "doc", "dokumentation", "documentación", "documentação", "documentazione", "ドキュメント", "文档", "문서"]),
    ("message", &["msg", "msgs", "nachricht", "mensaje", "mensagem", "メッセージ", "消息", "메시지"]),
    ("performance", &["perf", "leistung", "rendimiento", "desempenho", "パフォーマンス", "性能", "성능"]),
    ("translation", &["i18n", "l10n", "localization", "localisation", "internationalization", "übersetzung", "traducción", "tradução", "traduction", "翻訳", "翻译", "번역", "多言語"]),
    ("directory", &["dir", "dirs", "folder", "folders", "verzeichnis", "ordner", "carpeta", "pasta", "dossier", "répertoire", "ディレクトリ", "フォルダ", "目录", "文件夹", "디렉터리", "폴더"]),
    ("parameter", &["param", "params", "parámetro", "parâmetro", "paramètre", "パラメータ", "参数", "매개변수", "파라미터"]),
    ("variable", &["var", "vars", "variablen", "変数", "变量", "변수"]),
    ("function", &["func", "funcs", "fn", "funktion", "función", "função", "fonction", "funzione", "関数", "函数", "함수"]),
    ("test", &["testing", "prueba", "pruebas", "teste", "testes", "testen", "テスト", "测试", "測試", "테스트"]),
    ("migration", &["migrations", "migración", "migraciones", "migração", "migrações", "migrazione", "migratie", "マイグレーション", "迁移", "마이그레이션"]),
    ("branch", &["branches", "rama", "ramas", "ramo", "zweig", "ブランチ", "分支", "브랜치"]),
    ("commit", &["commits", "コミット", "提交", "커밋"]),
    ("review", &["reviews", "revisión", "revisão", "revue", "relecture", "レビュー", "评审", "审查", "代码审查", "리뷰"]),
    ("log", &["logs", "logging", "registro", "registros", "journaux", "ログ", "日志", "로그", "protokoll"]),
    ("error", &["errors", "fehler", "erreur", "erreurs", "erro", "erros", "errore", "errori", "fout", "エラー", "错误", "에러", "오류"]),
    ("version", &["versions", "versión", "versiones", "versão", "versões", "versione", "バージョン", "版本", "버전"]),
    ("release", &["releases", "リリース", "发布", "发版", "릴리스", "릴리즈"]),
    ("deploy", &["deployment", "deployments", "despliegue", "desplegar", "déploiement", "déployer", "implantação", "deploiement", "デプロイ", "部署", "배포"]),
    ("container", &["containers", "contenedor", "contenedores", "conteneur", "conteneurs", "contêiner", "コンテナ", "容器", "컨테이너"]),
    ("image", &["images", "imagen", "imágenes", "imagem", "imagens", "イメージ", "镜像", "이미지"]),
    ("secret", &["secrets", "secreto", "secretos", "segredo", "segredos", "geheimnis", "シークレット", "密钥", "机密", "시크릿"]),
    ("password", &["passwords", "passwort", "contraseña", "senha", "パスワード", "密码", "비밀번호"]),
    ("token", &["tokens", "トークン", "令牌", "토큰"]),
    ("cache", &["caches", "caching", "caché", "キャッシュ", "缓存", "캐시"]),
    ("timezone", &["time-zone", "tz", "time zone", "time zones", "zeitzone", "fuseau", "タイムゾーン", "时区", "시간대"]),
    ("comment", &["comments", "kommentar", "kommentare", "comentario", "comentarios", "commentaire", "commentaires", "comentário", "comentários", "commento", "commenti", "コメント", "注释", "评论", "주석", "코멘트"]),
    ("retry", &["retries", "retrying", "reintento", "reintentos", "réessai", "tentativa", "wiederholung", "リトライ", "再試行", "重试", "재시도"]),
    ("timeout", &["timeouts", "time-out", "タイムアウト", "超时", "타임아웃"]),
    ("coverage", &["abdeckung", "testabdeckung", "cobertura", "couverture", "copertura", "カバレッジ", "覆盖率", "커버리지"]),
    ("pipeline", &["pipelines", "パイプライン", "流水线", "파이프라인"]),
    ("endpoint", &["endpoints", "エンドポイント", "端点", "엔드포인트"]),
    ("mock", &["mocks", "mocking", "モック", "模拟"]),
    ("build", &["builds", "ビルド", "构建", "빌드"]),
    ("server", &["servers", "servidor", "serveur", "サーバー", "サーバ", "服务器", "서버"]),
    ("client", &["clients", "cliente", "クライアント", "客户端", "클라이언트"]),
    ("format", &["formatting", "formatter", "フォーマット", "格式", "포맷"]),
    ("indentation", &["indent", "indents", "einrückung", "sangría", "indentação", "インデント", "缩进", "들여쓰기"]),
    ("changelog", &["change-log", "変更履歴", "更新日志", "변경 이력"]),
    ("feature-flag", &["feature-flags", "feature-toggle", "feature-toggles", "feature flag", "feature flags", "feature toggle", "feature toggles", "フィーチャーフラグ", "功能开关", "기능 플래그"]),
    ("approval", &["approvals", "approve", "approves", "approved", "genehmigung", "aprobación", "aprovação", "approbation", "承認", "批准", "승인"]),
    ("pagination", &["paginate", "paginated", "paging", "ページネーション", "分页", "페이지네이션"]),
    ("exception", &["exceptions", "例外", "异常", "예외"]),
    ("async", &["asynchronous", "非同期", "异步", "비동기"]),
    ("sync", &["synchronous", "同期", "同步", "동기"]),
    ("query", &["queries", "クエリ", "查询", "쿼리"]),
    ("schema", &["schemas", "スキーマ", "스키마"]),
    ("hook", &["hooks", "フック", "钩子", "훅"]),
    ("lint", &["linter", "linters", "linting", "リンター", "リント", "린트", "린터"]),
    ("ticket", &["tickets", "issue-key", "チケット", "工单", "티켓"]),
    ("hotfix", &["hotfixes", "hot-fix", "ホットフィックス", "热修复", "핫픽스"]),
    ("snapshot", &["snapshots", "スナップショット", "快照", "스냅샷"]),
    ("vendor", &["vendoring", "vendored"]),
    ("utc", &["協定世界時", "协调世界时"]),
];

/// A narrower term and the broader one it is a kind of (named too, at low weight).
const BROADER: &[(&str, &str)] = &[
    ("postgres", "database"),
    ("sqlite", "database"),
    ("mysql", "database"),
    ("mariadb", "database"),
    ("mongodb", "database"),
    ("integration-test", "test"),
    ("unit-test", "test"),
    ("e2e", "test"),
    ("kubernetes", "deploy"),
    ("hotfix", "release"),
];

pub(crate) struct Glossary {
    words: HashMap<&'static str, &'static str>,
    /// Latin-script names of several words ("foreign key"), matched on word boundaries.
    phrases: Vec<(&'static str, &'static str)>,
    /// Han/katakana names (matched inside runs) and Hangul names (word prefixes), longest first.
    cjk: Vec<(&'static str, &'static str)>,
    broader: HashMap<&'static str, &'static str>,
}

fn is_cjk_name(s: &str) -> bool {
    s.chars()
        .any(|c| super::analyze::is_cjk(c) || super::analyze::is_hangul(c))
}

impl Glossary {
    pub(crate) fn get() -> &'static Glossary {
        static G: OnceLock<Glossary> = OnceLock::new();
        G.get_or_init(|| {
            let mut words = HashMap::new();
            let mut cjk = Vec::new();
            let mut phrases = Vec::new();
            for &(key, names) in ENTRIES {
                words.insert(key, key);
                for &n in names {
                    if is_cjk_name(n) {
                        cjk.push((n, key));
                    } else if n.contains(' ') {
                        phrases.push((n, key));
                    } else {
                        words.insert(n, key);
                    }
                }
            }
            cjk.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
            phrases.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
            Glossary {
                words,
                phrases,
                cjk,
                broader: BROADER.iter().copied().collect(),
            }
        })
    }

    /// The key of a lower-case Latin-script word (or its stem), if the glossary names it.
    pub(crate) fn key(&self, word: &str, stem: &str) -> Option<&'static str> {
        self.words
            .get(word)
            .or_else(|| self.words.get(stem))
            .copied()
    }

    /// Keys named by several-word names in a lower-case clause: (byte offset, length, key).
    pub(crate) fn in_phrases(&self, clause: &str) -> Vec<(usize, usize, &'static str)> {
        let mut out: Vec<(usize, usize, &'static str)> = Vec::new();
        for &(name, key) in &self.phrases {
            for (at, _) in clause.match_indices(name) {
                let end = at + name.len();
                let before = clause[..at].chars().next_back();
                let after = clause[end..].chars().next();
                let bounded = !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric);
                let taken = out.iter().any(|&(s, l, _)| at < s + l && s < end);
                if bounded && !taken {
                    out.push((at, name.len(), key));
                }
            }
        }
        out
    }

    /// Keys named inside a run of Han/katakana characters: (byte offset in the run, length, key).
    pub(crate) fn in_run(&self, run: &str) -> Vec<(usize, usize, &'static str)> {
        let mut out: Vec<(usize, usize, &'static str)> = Vec::new();
        for &(name, key) in &self.cjk {
            if name.chars().any(super::analyze::is_hangul) {
                continue;
            }
            for (at, _) in run.match_indices(name) {
                let taken = out
                    .iter()
                    .any(|&(s, l, _)| at < s + l && s < at + name.len());
                if !taken {
                    out.push((at, name.len(), key));
                }
            }
        }
        out
    }

    /// The key of a Hangul word that starts with a glossary name.
    pub(crate) fn hangul_key(&self, word: &str) -> Option<&'static str> {
        self.cjk
            .iter()
            .filter(|(n, _)| n.chars().all(|c| super::analyze::is_hangul(c) || c == ' '))
            .find(|(n, _)| !n.contains(' ') && word.starts_with(n))
            .map(|&(_, k)| k)
    }

    pub(crate) fn broader(&self, key: &str) -> Option<&'static str> {
        self.broader.get(key).copied()
    }
}
