//! Normalised terms: one key for the abbreviations, spellings and translations of the everyday
//! nouns of software work, so that "MR" and "pull request", "pg" and "PostgreSQL", "k8s" and
//! "Kubernetes", "Datenbank" and "database", "テスト" and "test" name the same subject.
//!
//! This is general vocabulary, not per-topic knowledge: each entry is a thing engineers write
//! rules about, with the names it goes by in English (abbreviations included), German, French,
//! Spanish, Portuguese, Italian, Dutch, Polish, Swedish, Turkish, Chinese, Japanese and Korean
//! (about two hundred things; the later half written from general knowledge, not from the
//! evaluation sets' misses). A name that means something else in another language is left
//! out (Dutch "bestand", Swedish "knapp", French "police"). A few entries also name
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
    ("rollback", &["rollbacks", "roll back", "roll-back", "rolled back", "zurückrollen", "retour arrière", "reversión", "reversão", "terugdraaien", "wycofanie", "geri alma", "回滚", "回滾", "ロールバック", "롤백"]),
    ("ci", &["ci/cd", "cicd", "continuous integration", "continuous-integration", "kontinuierliche integration", "intégration continue", "integración continua", "integração contínua", "integrazione continua", "ciągła integracja", "持续集成", "持續整合", "継続的インテグレーション", "지속적 통합"]),
    ("warning", &["warnings", "warnung", "warnungen", "avertissement", "avertissements", "advertencia", "advertencias", "aviso", "avisos", "avviso", "avvisi", "waarschuwing", "waarschuwingen", "ostrzeżenie", "ostrzeżenia", "varning", "varningar", "uyarı", "uyarılar", "警告", "경고"]),
    ("alert", &["alerts", "alerting", "alarm", "alarms", "alarme", "alerte", "alertes", "alerta", "alertas", "allarme", "allarmi", "alarmen", "alerty", "告警", "警报", "警報", "アラート", "알람", "경보"]),
    ("incident", &["incidents", "vorfall", "vorfälle", "incidente", "incidentes", "incidenti", "incydent", "incydenty", "事故", "インシデント", "인시던트"]),
    ("postmortem", &["postmortems", "post-mortem", "post-mortems", "post mortem", "ポストモーテム", "复盘", "事后分析", "포스트모템"]),
    ("on-call", &["on call", "oncall", "pager", "pagers", "rufbereitschaft", "bereitschaftsdienst", "astreinte", "astreintes", "guardia", "guardias", "plantão", "sobreaviso", "reperibilità", "dyżur", "dyżury", "beredskap", "nöbet", "nöbetçi", "值班", "オンコール", "온콜", "당직"]),
    ("outage", &["outages", "downtime", "ausfall", "ausfälle", "panne", "pannes", "caída", "interrupción", "indisponibilidade", "disservizio", "awaria", "avbrott", "kesinti", "宕机", "故障", "停机", "障害", "ダウンタイム", "장애", "다운타임"]),
    ("api", &["apis"]),
    ("api-key", &["api key", "api keys", "api-keys", "apikey", "apikeys", "api-schlüssel", "clé api", "clave api", "chave api", "chiave api", "api-sleutel", "klucz api", "api-nyckel", "api anahtarı", "api密钥", "apiキー", "api 키"]),
    ("credentials", &["credential", "creds", "zugangsdaten", "identifiants", "credenciales", "credenciais", "credenziali", "inloggegevens", "dane uwierzytelniające", "inloggningsuppgifter", "kimlik bilgileri", "凭据", "凭证", "認証情報", "자격 증명"]),
    ("two-factor-auth", &["2fa", "mfa", "two-factor", "two factor", "two-factor authentication", "multi-factor", "multi-factor authentication", "zwei-faktor-authentifizierung", "authentification à deux facteurs", "autenticación de dos factores", "autenticação de dois fatores", "autenticazione a due fattori", "tweestapsverificatie", "uwierzytelnianie dwuskładnikowe", "tvåfaktorsautentisering", "iki faktörlü kimlik doğrulama", "双因素认证", "两步验证", "二要素認証", "2段階認証", "2단계 인증", "이중 인증"]),
    ("certificate", &["certificates", "cert", "certs", "zertifikat", "zertifikate", "certificat", "certificats", "certificado", "certificados", "certificato", "certificati", "certificaat", "certificaten", "certyfikat", "certyfikaty", "certifikat", "sertifika", "证书", "證書", "証明書", "인증서"]),
    ("encryption", &["encrypt", "encrypted", "encrypting", "verschlüsselung", "verschlüsselt", "chiffrement", "chiffré", "cifrado", "encriptación", "criptografia", "crittografia", "cifratura", "versleuteling", "szyfrowanie", "kryptering", "şifreleme", "加密", "暗号化", "암호화"]),
    ("security", &["sicherheit", "sécurité", "seguridad", "segurança", "sicurezza", "beveiliging", "bezpieczeństwo", "säkerhet", "güvenlik", "安全", "セキュリティ", "보안"]),
    ("vulnerability", &["vulnerabilities", "vuln", "vulns", "cve", "cves", "schwachstelle", "schwachstellen", "sicherheitslücke", "sicherheitslücken", "vulnérabilité", "vulnérabilités", "vulnerabilidad", "vulnerabilidades", "vulnerabilidade", "vulnerabilità", "kwetsbaarheid", "kwetsbaarheden", "podatność", "sårbarhet", "zafiyet", "güvenlik açığı", "漏洞", "脆弱性", "취약점"]),
    ("firewall", &["firewalls", "pare-feu", "cortafuegos", "brandvägg", "güvenlik duvarı", "防火墙", "防火牆", "ファイアウォール", "방화벽"]),
    ("load-balancer", &["load balancer", "load balancers", "load-balancers", "loadbalancer", "loadbalancers", "lastverteiler", "répartiteur de charge", "balanceador de carga", "bilanciatore di carico", "yük dengeleyici", "负载均衡", "负载均衡器", "ロードバランサー", "ロードバランサ", "로드 밸런서", "로드밸런서"]),
    ("queue", &["queues", "queuing", "queueing", "warteschlange", "warteschlangen", "file d'attente", "cola", "colas", "coda", "wachtrij", "kolejka", "kolejki", "kuyruk", "队列", "隊列", "キュー", "큐"]),
    ("message-broker", &["message broker", "message brokers", "broker", "brokers", "メッセージブローカー", "消息代理", "消息中间件", "메시지 브로커"]),
    ("cluster", &["clusters", "clúster", "klaster", "kluster", "küme", "集群", "叢集", "クラスター", "クラスタ", "클러스터"]),
    ("service", &["services", "dienst", "dienste", "diensten", "servicio", "servicios", "serviço", "serviços", "servizio", "servizi", "usługa", "usługi", "tjänst", "tjänster", "servis", "hizmet", "服务", "服務", "サービス", "서비스"]),
    ("microservice", &["microservices", "micro-service", "micro-services", "microservicio", "microservicios", "microsserviço", "microsserviços", "microservizio", "microservizi", "mikroservice", "mikroserwis", "mikrousługa", "mikroservis", "mikrotjänst", "微服务", "微服務", "マイクロサービス", "마이크로서비스"]),
    ("request", &["requests", "anfrage", "anfragen", "requête", "requêtes", "solicitud", "solicitudes", "requisição", "requisições", "richiesta", "richieste", "verzoek", "żądanie", "żądania", "förfrågan", "begäran", "istek", "istekler", "请求", "リクエスト", "요청", "리퀘스트"]),
    ("response", &["responses", "antwort", "réponse", "réponses", "respuesta", "respuestas", "resposta", "respostas", "risposta", "risposte", "antwoord", "odpowiedź", "svar", "yanıt", "响应", "響應", "レスポンス", "응답"]),
    ("rate-limit", &["rate limit", "rate limits", "rate-limits", "rate limiting", "rate-limiting", "ratelimit", "throttling", "throttle", "drosselung", "limitation de débit", "限流", "速率限制", "レート制限", "レートリミット", "속도 제한", "레이트 리밋"]),
    ("backup", &["backups", "back-up", "back-ups", "sicherung", "sicherungen", "datensicherung", "sauvegarde", "sauvegardes", "copia de seguridad", "respaldo", "respaldos", "cópia de segurança", "kopia zapasowa", "kopie zapasowe", "säkerhetskopia", "yedek", "yedekleme", "备份", "備份", "バックアップ", "백업"]),
    ("restore", &["restores", "restoring", "restored", "wiederherstellung", "wiederherstellen", "restauration", "restaurer", "restauración", "restaurar", "restauração", "ripristino", "ripristinare", "przywracanie", "återställning", "geri yükleme", "恢复", "還原", "復元", "リストア", "복원", "복구"]),
    ("monitoring", &["überwachung", "surveillance", "monitoreo", "monitorización", "monitoramento", "monitoraggio", "bewaking", "monitorowanie", "övervakning", "izleme", "监控", "監控", "監視", "モニタリング", "모니터링"]),
    ("metric", &["metrics", "metrik", "metriken", "métrique", "métriques", "métrica", "métricas", "metrica", "metriche", "metriek", "metrieken", "metryka", "metryki", "指标", "指標", "メトリクス", "メトリック", "메트릭", "지표"]),
    ("dashboard", &["dashboards", "tableau de bord", "tableaux de bord", "painel", "cruscotto", "gösterge paneli", "仪表盘", "仪表板", "儀表板", "ダッシュボード", "대시보드"]),
    ("trace", &["traces", "tracing", "distributed tracing", "traza", "trazas", "rastreamento", "traccia", "tracce", "链路追踪", "追踪", "トレース", "トレーシング", "트레이스", "트레이싱"]),
    ("stack-trace", &["stack trace", "stack traces", "stacktrace", "stacktraces", "stack-traces", "backtrace", "backtraces", "traceback", "tracebacks", "スタックトレース", "堆栈跟踪", "调用栈", "스택 트레이스"]),
    ("reviewer", &["reviewers", "prüfer", "relecteur", "relecteurs", "revisor", "revisores", "revisore", "revisori", "recenzent", "granskare", "レビュアー", "レビュワー", "审阅者", "评审人", "리뷰어"]),
    ("issue", &["issues", "イシュー", "이슈"]),
    ("bug", &["bugs", "buggy", "defect", "defects", "bogue", "bogues", "バグ", "缺陷", "버그"]),
    ("table", &["tables", "tabelle", "tabellen", "tabla", "tablas", "tabela", "tabelas", "tabella", "tabel", "tabele", "tabell", "tabeller", "tablo", "tablolar", "数据表", "資料表", "テーブル", "테이블"]),
    ("column", &["columns", "spalte", "spalten", "colonne", "colonnes", "columna", "columnas", "coluna", "colunas", "colonna", "kolom", "kolommen", "kolumna", "kolumny", "kolumn", "kolumner", "sütun", "カラム", "컬럼", "칼럼"]),
    ("index", &["indexes", "indices", "indizes", "índice", "índices", "indice", "indici", "indeks", "indeksy", "索引", "インデックス", "인덱스"]),
    ("transaction", &["transactions", "transaktion", "transaktionen", "transaktioner", "transacción", "transacciones", "transação", "transações", "transazione", "transazioni", "transactie", "transacties", "transakcja", "transakcje", "事务", "トランザクション", "트랜잭션"]),
    ("field", &["fields", "feld", "felder", "champ", "champs", "campo", "campos", "campi", "veld", "velden", "fält", "字段", "欄位", "フィールド", "필드"]),
    ("file", &["files", "datei", "dateien", "fichier", "fichiers", "archivo", "archivos", "arquivo", "arquivos", "plik", "pliki", "dosya", "dosyalar", "文件", "檔案", "ファイル", "파일"]),
    ("method", &["methods", "methode", "methoden", "méthode", "méthodes", "método", "métodos", "metodo", "metodi", "metoda", "metody", "metod", "metoder", "metot", "メソッド", "메서드", "메소드"]),
    ("class", &["classes", "klasse", "klassen", "classe", "clase", "clases", "classi", "klasa", "klasy", "klass", "klasser", "sınıf", "クラス", "클래스"]),
    ("constant", &["constants", "konstante", "konstanten", "constante", "constantes", "costante", "costanti", "常量", "定数", "상수"]),
    ("string", &["strings", "zeichenkette", "zeichenketten", "chaîne de caractères", "cadena de texto", "stringa", "stringhe", "ciąg znaków", "sträng", "strängar", "字符串", "文字列", "문자열"]),
    ("regex", &["regexes", "regexp", "regexps", "regular expression", "regular expressions", "regulärer ausdruck", "reguläre ausdrücke", "expression régulière", "expressions régulières", "expresión regular", "expresiones regulares", "expressão regular", "espressione regolare", "wyrażenie regularne", "正则表达式", "正則表達式", "正規表現", "정규식", "정규 표현식"]),
    ("date", &["dates", "datum", "fecha", "fechas", "tarih", "日期", "日付", "날짜"]),
    ("timestamp", &["timestamps", "time stamp", "time stamps", "zeitstempel", "horodatage", "marca de tiempo", "marca temporale", "tidsstämpel", "znacznik czasu", "zaman damgası", "时间戳", "時間戳", "タイムスタンプ", "타임스탬프"]),
    ("script", &["scripts", "skript", "skripte", "skrypt", "skrypty", "betik", "スクリプト", "脚本", "스크립트"]),
    ("package", &["packages", "paket", "pakete", "paquet", "paquets", "paquete", "paquetes", "pacote", "pacotes", "pacchetto", "pacchetti", "pakket", "pakketten", "pakiet", "pakiety", "软件包", "パッケージ", "패키지"]),
    ("module", &["modules", "modul", "módulo", "módulos", "moduli", "moduł", "moduły", "模块", "模組", "モジュール", "모듈"]),
    ("interface", &["interfaces", "schnittstelle", "schnittstellen", "interfaz", "interfaccia", "interfacce", "interfejs", "gränssnitt", "arayüz", "接口", "インターフェース", "インタフェース", "인터페이스"]),
    ("cron", &["cronjob", "cronjobs", "cron job", "cron jobs", "cron-job", "scheduled job", "scheduled jobs", "scheduled task", "scheduled tasks", "定时任务", "定期実行", "크론"]),
    ("webhook", &["webhooks", "web hook", "ウェブフック", "웹훅"]),
    ("frontend", &["front-end", "front end", "フロントエンド", "前端", "프론트엔드", "프런트엔드"]),
    ("backend", &["back-end", "back end", "バックエンド", "后端", "後端", "백엔드"]),
    ("ui", &["user interface", "user interfaces", "gui", "benutzeroberfläche", "interface utilisateur", "interfaz de usuario", "interface do usuário", "interfaccia utente", "gebruikersinterface", "interfejs użytkownika", "användargränssnitt", "kullanıcı arayüzü", "用户界面", "ユーザーインターフェース", "사용자 인터페이스"]),
    ("user", &["users", "benutzer", "nutzer", "utilisateur", "utilisateurs", "usuario", "usuarios", "usuário", "usuários", "utente", "utenti", "gebruiker", "gebruikers", "użytkownik", "użytkownicy", "användare", "kullanıcı", "kullanıcılar", "用户", "用戶", "ユーザー", "ユーザ", "사용자", "유저"]),
    ("customer", &["customers", "kunde", "kunden", "klant", "klanten", "klient", "klienci", "kund", "kunder", "müşteri", "müşteriler", "客户", "顾客", "顧客", "お客様", "고객"]),
    ("account", &["accounts", "konto", "konten", "konta", "cuenta", "cuentas", "conta", "contas", "hesap", "hesaplar", "账户", "账号", "帳號", "アカウント", "계정"]),
    ("permission", &["permissions", "berechtigung", "berechtigungen", "permiso", "permisos", "permissão", "permissões", "permesso", "permessi", "uprawnienie", "uprawnienia", "behörighet", "behörigheter", "yetki", "yetkiler", "权限", "權限", "権限", "권한"]),
    ("role", &["roles", "rolle", "rollen", "rôle", "rôles", "rol", "ruolo", "ruoli", "rola", "角色", "ロール", "役割", "역할"]),
    ("admin", &["admins", "administrator", "administrators", "administratoren", "administrateur", "administrateurs", "administrador", "administradores", "amministratore", "amministratori", "administratör", "yönetici", "管理员", "管理員", "管理者", "アドミン", "관리자"]),
    ("tenant", &["tenants", "tenancy", "multi-tenant", "multitenant", "multi-tenancy", "mandant", "mandanten", "mandantenfähig", "inquilino", "inquilinos", "租户", "テナント", "테넌트"]),
    ("email", &["emails", "e-mail", "e-mails", "mail", "mails", "courriel", "courriels", "correo", "correos", "correo electrónico", "mejl", "e-post", "e-posta", "邮件", "电子邮件", "郵件", "電子郵件", "メール", "이메일", "메일"]),
    ("notification", &["notifications", "benachrichtigung", "benachrichtigungen", "notificación", "notificaciones", "notificação", "notificações", "notifica", "notifiche", "melding", "meldingen", "powiadomienie", "powiadomienia", "avisering", "aviseringar", "bildirim", "bildirimler", "通知", "알림"]),
    ("screen", &["screens", "bildschirm", "écran", "écrans", "pantalla", "pantallas", "tela", "telas", "schermata", "schermate", "scherm", "schermen", "ekran", "ekrany", "skärm", "skärmar", "屏幕", "画面", "화면"]),
    ("screenshot", &["screenshots", "bildschirmfoto", "capture d'écran", "captures d'écran", "captura de pantalla", "captura de tela", "zrzut ekranu", "skärmbild", "ekran görüntüsü", "截图", "截圖", "スクリーンショット", "スクショ", "스크린샷"]),
    ("page", &["pages", "seite", "seiten", "página", "páginas", "pagina", "pagine", "paginas", "strona", "strony", "sida", "sidor", "sayfa", "sayfalar", "页面", "頁面", "ページ", "페이지"]),
    ("button", &["buttons", "schaltfläche", "schaltflächen", "bouton", "boutons", "botón", "botones", "botão", "botões", "pulsante", "pulsanti", "knop", "knoppen", "przycisk", "przyciski", "buton", "按钮", "按鈕", "ボタン", "버튼"]),
    ("form", &["forms", "formular", "formulare", "formulaire", "formulaires", "formulario", "formularios", "formulário", "formulários", "formulier", "formulieren", "formularz", "formularze", "formulär", "表单", "表單", "フォーム", "폼"]),
    ("modal", &["modals", "modale", "modali", "dialog", "dialogs", "ダイアログ", "モーダル", "弹窗", "模态框", "对话框", "모달", "다이얼로그"]),
    ("component", &["components", "komponente", "komponenten", "composant", "composants", "componente", "componentes", "componenti", "komponent", "komponenty", "bileşen", "bileşenler", "组件", "元件", "コンポーネント", "컴포넌트"]),
    ("style", &["styles", "styling", "stylesheet", "stylesheets", "stil", "estilo", "estilos", "stile", "stijl", "styl", "样式", "スタイル", "스타일"]),
    ("font", &["fonts", "schriftart", "schriftarten", "lettertype", "czcionka", "czcionki", "typsnitt", "yazı tipi", "字体", "字體", "フォント", "폰트", "글꼴"]),
    ("color", &["colors", "colour", "colours", "farbe", "farben", "couleur", "couleurs", "colores", "colore", "colori", "kleur", "kleuren", "kolor", "kolory", "färg", "färger", "renk", "颜色", "顏色", "カラー", "색상"]),
    ("icon", &["icons", "icône", "icônes", "icono", "iconos", "ícone", "ícones", "icona", "icone", "ikona", "ikony", "ikon", "图标", "圖示", "アイコン", "아이콘"]),
    ("picture", &["pictures", "photo", "photos", "bild", "bilder", "foto", "fotos", "immagine", "immagini", "afbeelding", "afbeeldingen", "zdjęcie", "zdjęcia", "resim", "görsel", "图片", "圖片", "照片", "画像", "写真", "사진"]),
    ("upload", &["uploads", "uploading", "uploaded", "hochladen", "téléverser", "téléversement", "uploaden", "uppladdning", "上传", "上傳", "アップロード", "업로드"]),
    ("download", &["downloads", "downloading", "downloaded", "herunterladen", "télécharger", "téléchargement", "descargar", "descarga", "descargas", "baixar", "scaricare", "downloaden", "pobieranie", "nedladdning", "indirme", "下载", "下載", "ダウンロード", "다운로드"]),
    ("meeting", &["meetings", "besprechung", "besprechungen", "réunion", "réunions", "reunión", "reuniones", "reunião", "reuniões", "riunione", "riunioni", "vergadering", "vergaderingen", "spotkanie", "spotkania", "möte", "möten", "toplantı", "toplantılar", "会议", "會議", "会議", "ミーティング", "회의", "미팅"]),
    ("notes", &["meeting notes", "meeting minutes", "memo", "memos", "notizen", "notas", "appunti", "notities", "notatki", "anteckningar", "notlar", "笔记", "筆記", "会议纪要", "議事録", "メモ", "메모", "회의록"]),
    ("standup", &["standups", "stand-up", "stand-ups", "daily standup", "daily stand-up", "站会", "朝会", "スタンドアップ", "스탠드업"]),
    ("retrospective", &["retrospectives", "retro", "retros", "retrospektive", "rétrospective", "retrospectiva", "retrospettiva", "retrospektywa", "retrospektiv", "retrospektif", "回顾会", "振り返り", "レトロスペクティブ", "회고"]),
    ("sprint", &["sprints", "スプリント", "冲刺", "스프린트"]),
    ("backlog", &["backlogs", "バックログ", "待办事项", "백로그"]),
    ("user-story", &["user story", "user stories", "userstory", "userstories", "ユーザーストーリー", "用户故事", "사용자 스토리", "유저 스토리"]),
    ("estimate", &["estimates", "estimation", "estimations", "schätzung", "schätzungen", "aufwandsschätzung", "estimación", "estimaciones", "estimativa", "estimativas", "stima", "stime", "schatting", "inschatting", "estymacja", "uppskattning", "tahmin", "估算", "見積もり", "見積り", "추정", "견적", "story points", "story point"]),
    ("deadline", &["deadlines", "frist", "fristen", "abgabetermin", "échéance", "échéances", "date limite", "fecha límite", "prazo", "prazos", "scadenza", "scadenze", "son tarih", "teslim tarihi", "截止日期", "期限", "締め切り", "締切", "마감", "마감일", "데드라인"]),
    ("milestone", &["milestones", "meilenstein", "meilensteine", "jalon", "jalons", "hito", "hitos", "mijlpaal", "mijlpalen", "kamień milowy", "milstolpe", "kilometre taşı", "里程碑", "マイルストーン", "마일스톤"]),
    ("roadmap", &["roadmaps", "road map", "feuille de route", "hoja de ruta", "路线图", "ロードマップ", "로드맵"]),
    ("specification", &["specifications", "spec", "specs", "spezifikation", "spezifikationen", "spécification", "spécifications", "especificación", "especificaciones", "especificação", "especificações", "specifica", "specifiche", "specificatie", "specyfikacja", "specifikation", "仕様", "仕様書", "명세", "명세서", "스펙"]),
    ("requirement", &["requirements", "anforderung", "anforderungen", "exigence", "exigences", "requisito", "requisitos", "requisiti", "vereiste", "vereisten", "wymaganie", "wymagania", "krav", "gereksinim", "gereksinimler", "需求", "要件", "요구사항"]),
    ("accessibility", &["a11y", "barrierefreiheit", "accessibilité", "accesibilidad", "acessibilidade", "accessibilità", "toegankelijkheid", "erişilebilirlik", "无障碍", "可访问性", "アクセシビリティ", "접근성"]),
    ("refactoring", &["refactor", "refactors", "refactored", "refactorings", "refaktorisierung", "refactorisation", "refactorización", "refatoração", "refaktoryzacja", "refaktorering", "重构", "重構", "リファクタリング", "리팩터링", "리팩토링"]),
    ("wiki", &["wikis", "ウィキ", "위키"]),
    ("handbook", &["handbooks", "handbuch", "handboek", "podręcznik", "handbok", "el kitabı", "手册", "手冊", "ハンドブック", "マニュアル", "핸드북", "매뉴얼"]),
    ("runbook", &["runbooks", "playbook", "playbooks", "betriebshandbuch", "运行手册", "ランブック", "런북"]),
    ("manager", &["managers", "vorgesetzter", "vorgesetzte", "führungskraft", "gerente", "gerentes", "leidinggevende", "kierownik", "menedżer", "müdür", "经理", "經理", "上司", "マネージャー", "マネジャー", "매니저"]),
    ("team-lead", &["team lead", "team leads", "team leader", "team leaders", "teamlead", "tech lead", "tech leads", "tech-lead", "teamleiter", "teamleiterin", "chef d'équipe", "líder de equipo", "líder técnico", "teamleider", "lider zespołu", "teamledare", "takım lideri", "技术负责人", "组长", "テックリード", "チームリーダー", "팀장", "테크 리드"]),
    ("contractor", &["contractors", "freelancer", "freelancers", "freiberufler", "auftragnehmer", "prestataire", "prestataires", "sous-traitant", "sous-traitants", "contratista", "contratistas", "terceirizado", "terceirizados", "zzp'er", "zzp'ers", "podwykonawca", "konsult", "taşeron", "yüklenici", "外包", "承包商", "業務委託", "외주"]),
    ("employee", &["employees", "mitarbeiter", "mitarbeiterin", "mitarbeitende", "employé", "employés", "empleado", "empleados", "funcionário", "funcionários", "dipendente", "dipendenti", "medewerker", "medewerkers", "pracownik", "pracownicy", "anställd", "anställda", "medarbetare", "çalışan", "çalışanlar", "员工", "員工", "従業員", "社員", "직원"]),
    ("vacation", &["vacations", "pto", "time off", "paid time off", "annual leave", "urlaub", "vacances", "congé", "congés", "vacaciones", "férias", "ferie", "vakantie", "verlof", "urlop", "wakacje", "ledighet", "tatil", "休假", "年假", "休暇", "有給休暇", "휴가", "연차"]),
    ("holiday", &["holidays", "public holiday", "public holidays", "bank holiday", "bank holidays", "feiertag", "feiertage", "jour férié", "jours fériés", "día festivo", "días festivos", "festivo", "festivos", "feriado", "feriados", "festività", "feestdag", "feestdagen", "święto", "święta", "helgdag", "helgdagar", "resmi tatil", "bayram", "节假日", "法定节假日", "祝日", "공휴일"]),
    ("weekend", &["weekends", "week-end", "week-ends", "wochenende", "wochenenden", "fin de semana", "fines de semana", "fim de semana", "fine settimana", "helg", "helgen", "hafta sonu", "周末", "週末", "주말"]),
    ("overtime", &["überstunden", "heures supplémentaires", "horas extra", "horas extras", "straordinari", "overuren", "nadgodziny", "övertid", "fazla mesai", "加班", "残業", "야근", "초과 근무"]),
    ("interview", &["interviews", "vorstellungsgespräch", "vorstellungsgespräche", "entrevista", "entrevistas", "colloquio", "colloqui", "sollicitatiegesprek", "rozmowa kwalifikacyjna", "intervju", "mülakat", "面试", "面試", "面接", "면접"]),
    ("onboarding", &["onboard", "einarbeitung", "incorporación", "oryantasyon", "入职", "入職", "オンボーディング", "온보딩"]),
    ("budget", &["budgets", "presupuesto", "presupuestos", "orçamento", "orçamentos", "budżet", "bütçe", "预算", "預算", "予算", "예산"]),
    ("invoice", &["invoices", "rechnung", "rechnungen", "facture", "factures", "factura", "facturas", "fatura", "faturas", "fattura", "fatture", "factuur", "facturen", "faktura", "faktury", "fakturor", "发票", "發票", "請求書", "인보이스", "청구서"]),
    ("billing", &["abrechnung", "facturation", "facturación", "faturamento", "fatturazione", "facturering", "fakturering", "fakturowanie", "faturalandırma", "计费", "課金", "과금"]),
    ("payment", &["payments", "zahlung", "zahlungen", "paiement", "paiements", "pago", "pagos", "pagamento", "pagamentos", "pagamenti", "betaling", "betalingen", "płatność", "płatności", "betalning", "betalningar", "ödeme", "ödemeler", "支付", "付款", "決済", "支払い", "결제"]),
    ("expense", &["expenses", "spesen", "dépense", "dépenses", "note de frais", "gasto", "gastos", "despesa", "despesas", "spese", "onkosten", "wydatek", "wydatki", "utgift", "utgifter", "masraf", "masraflar", "harcama", "报销", "経費", "경비"]),
    ("license", &["licenses", "licence", "licences", "lizenz", "lizenzen", "licencia", "licencias", "licença", "licenças", "licenza", "licenze", "licentie", "licenties", "licencja", "licencje", "licens", "lisans", "许可证", "ライセンス", "라이선스", "라이센스"]),
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
